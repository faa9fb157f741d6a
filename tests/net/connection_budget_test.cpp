// The connection budgets as a plain class: unauthenticated connections capped per address and in total
// by evicting the oldest (of the same address, else of the address holding the most), authenticated and
// waiting ones counted apart and never evicted by arrivals.
#include "net/connection_budget.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

using shoal::net::ConnectionBudget;
using shoal::net::ConnectionCaps;

namespace {
ConnectionCaps small() {
  ConnectionCaps c;
  c.unauthenticated_total = 6;
  c.unauthenticated_per_source = 3;
  c.authenticated = 2;
  c.waiting = 1;
  return c;
}
}  // namespace

TEST_CASE("an address over its own cap pays with its oldest unauthenticated connection") {
  ConnectionBudget b(small());
  std::vector<ConnectionBudget::Ticket> t;
  for (int i = 0; i < 3; ++i) {
    const auto a = b.admit("10.0.0.1");
    CHECK_FALSE(a.evict.has_value());
    t.push_back(a.ticket);
  }
  const auto fourth = b.admit("10.0.0.1");
  REQUIRE(fourth.evict.has_value());
  CHECK(*fourth.evict == t[0]);
  CHECK(b.unauthenticated_from("10.0.0.1") == 3);
  CHECK(b.unauthenticated() == 3);
}

TEST_CASE("a full total evicts from the address holding the most, not from the newcomer's") {
  ConnectionBudget b(small());
  const auto flood1 = b.admit("10.0.0.9").ticket;
  b.admit("10.0.0.9");
  b.admit("10.0.0.9");
  b.admit("10.0.0.1");
  b.admit("10.0.0.2");
  b.admit("10.0.0.3");
  CHECK(b.unauthenticated() == 6);
  const auto a = b.admit("10.0.0.4");
  REQUIRE(a.evict.has_value());
  CHECK(*a.evict == flood1);
  CHECK(b.unauthenticated_from("10.0.0.9") == 2);
  CHECK(b.unauthenticated_from("10.0.0.4") == 1);
}

TEST_CASE("an authenticated connection leaves the unauthenticated budget and is never evicted by arrivals") {
  ConnectionBudget b(small());
  const auto member = b.admit("127.0.0.1").ticket;
  REQUIRE(b.authenticate(member));
  CHECK(b.unauthenticated() == 0);
  CHECK(b.authenticated() == 1);
  for (int i = 0; i < 100; ++i) {
    const auto a = b.admit("127.0.0.1");
    if (a.evict) CHECK(*a.evict != member);
  }
  CHECK(b.authenticated() == 1);
  CHECK(b.unauthenticated() == 3);
  b.release(member);
  CHECK(b.authenticated() == 0);
}

TEST_CASE("the authenticated cap refuses at authentication, and an evicted ticket cannot authenticate") {
  ConnectionBudget b(small());
  const auto x = b.admit("a").ticket, y = b.admit("b").ticket, z = b.admit("c").ticket;
  CHECK(b.authenticate(x));
  CHECK(b.authenticate(y));
  CHECK_FALSE(b.authenticate(z));
  CHECK(b.unauthenticated() == 0);
  const auto first = b.admit("d").ticket;
  b.admit("d");
  b.admit("d");
  b.admit("d");  // evicts `first`
  CHECK_FALSE(b.authenticate(first));
}

TEST_CASE("waiting requests have a budget of their own, apart from short exchanges") {
  ConnectionBudget b(small());
  const auto w1 = b.admit("a").ticket, w2 = b.admit("a").ticket;
  REQUIRE(b.authenticate(w1));
  REQUIRE(b.park(w1));
  CHECK(b.authenticated() == 0);
  CHECK(b.waiting() == 1);
  REQUIRE(b.authenticate(w2));
  CHECK_FALSE(b.park(w2));  // the waiting cap (1) is full: w2 is forgotten
  CHECK(b.authenticated() == 0);
  // Short exchanges still have their whole budget.
  CHECK(b.authenticate(b.admit("a").ticket));
  CHECK(b.authenticate(b.admit("a").ticket));
  b.release(w1);
  CHECK(b.waiting() == 0);
  b.release(w1);  // twice is harmless
  CHECK(b.waiting() == 0);
}

TEST_CASE("an idle connection pays first; a handshake in progress only after its grace, else the newcomer waits") {
  using namespace std::chrono_literals;
  ConnectionBudget b(small());  // grace 500 ms (the default)
  const ConnectionBudget::Time t0{std::chrono::seconds(100)};
  std::vector<ConnectionBudget::Ticket> t;
  for (int i = 0; i < 3; ++i) t.push_back(b.admit("127.0.0.1", t0 + std::chrono::milliseconds(i)).ticket);
  b.progressed(t[0]);  // a member's handshake under way; t[1] and t[2] sent nothing (a flooder's)
  CHECK(b.is_progressed(t[0]));
  CHECK(b.idle() == std::vector<ConnectionBudget::Ticket>{t[1], t[2]});
  // The idle ones pay, whatever their age, oldest first.
  const auto a1 = b.admit("127.0.0.1", t0 + 10ms);
  REQUIRE(a1.evict.has_value());
  CHECK(*a1.evict == t[1]);
  b.progressed(a1.ticket);
  b.progressed(t[2]);
  // Now every slot of the address is a young handshake in progress: the newcomer is refused, nobody evicted.
  const auto early = b.admit("127.0.0.1", t0 + 100ms);
  CHECK(early.refused);
  CHECK_FALSE(early.evict.has_value());
  CHECK(b.unauthenticated_from("127.0.0.1") == 3);
  b.release(early.ticket);  // a refused ticket is nobody's: releasing it changes nothing
  CHECK(b.unauthenticated() == 3);
  // Past its grace the oldest handshake pays (a key holder that stalls its handshake cannot hold a slot).
  const auto later = b.admit("127.0.0.1", t0 + 600ms);
  CHECK_FALSE(later.refused);
  REQUIRE(later.evict.has_value());
  CHECK(*later.evict == t[0]);
  // Without a time (the old call) every candidate counts as old.
  ConnectionBudget plain(small());
  for (int i = 0; i < 3; ++i) plain.progressed(plain.admit("a").ticket);
  CHECK_FALSE(plain.admit("a").refused);
}
