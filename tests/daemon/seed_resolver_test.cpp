// Seed names resolved in the background: every record of a name reported once, the agent's own address
// skipped without dropping the name, a name that does not resolve retried with backoff (never fatal),
// and names refreshed often while the agent is joining, rarely after.
#include "daemon/seed_resolver.hpp"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using shoal::daemon::SeedResolver;
using shoal::net::HostPort;

namespace {
SeedResolver::Timing fast() {
  SeedResolver::Timing t;
  t.first_retry = 20ms;
  t.max_retry = 80ms;
  t.refresh = 50ms;
  t.settled_refresh = 10min;  // the first case: none while it runs
  return t;
}
}  // namespace

TEST_CASE("a seed name's records are reported once, its own address skipped, a bad name retried") {
  boost::asio::io_context io;
  std::vector<std::string> found;
  bool joining = true;
  // "localhost" resolves through /etc/hosts; the .invalid domain never resolves (RFC 2606).
  SeedResolver r(io, {HostPort{"localhost", 7000}, HostPort{"localhost", 7001}, HostPort{"seed.invalid", 7000}},
                 "127.0.0.1:7001", [&](std::vector<std::string> addrs) { found.insert(found.end(), addrs.begin(), addrs.end()); },
                 [&] { return joining; }, fast());
  r.start();
  io.run_for(400ms);
  // 127.0.0.1:7000 once (refreshes find nothing new); 127.0.0.1:7001 is this agent; [::1] where localhost has it.
  REQUIRE_FALSE(found.empty());
  CHECK(found.front() == "127.0.0.1:7000");
  for (const auto& a : found) CHECK(a != "127.0.0.1:7001");
  size_t ours = 0;
  for (const auto& a : found) ours += a == "127.0.0.1:7000" ? 1 : 0;
  CHECK(ours == 1);
  // Three names; the bad one retried every 20, 40, 80, 80 ... ms, the good ones refreshed every 50 ms.
  const size_t while_joining = r.lookups();
  CHECK(while_joining >= 3 + 4);
  // Once in a view, the good names are no longer looked up; the bad one still is (it never resolved).
  joining = false;
  io.restart();
  io.run_for(100ms);  // the refreshes already armed fire once more
  const size_t settled = r.lookups();
  io.restart();
  io.run_for(400ms);
  const size_t later = r.lookups() - settled;
  CHECK(later >= 3);   // the bad name, about every 80 ms
  CHECK(later <= 8);   // and nothing else (the two good names would add 16)
  r.stop();
  const size_t stopped = r.lookups();
  io.restart();
  io.run_for(200ms);
  CHECK(r.lookups() == stopped);
}

TEST_CASE("once the agent is settled, a name that resolved is looked up again every settled_refresh") {
  boost::asio::io_context io;
  std::vector<std::string> found;
  bool joining = true;
  SeedResolver::Timing t = fast();
  t.settled_refresh = 300ms;
  SeedResolver r(
      io, {HostPort{"localhost", 7000}}, "127.0.0.1:7001",
      [&](std::vector<std::string> addrs) { found.insert(found.end(), addrs.begin(), addrs.end()); },
      [&] { return joining; }, t);
  r.start();
  io.run_for(120ms);  // resolved at start, refreshed every 50 ms while joining
  CHECK(r.lookups() >= 2);
  joining = false;
  io.restart();
  io.run_for(60ms);
  const size_t settled = r.lookups();
  io.restart();
  io.run_for(1000ms);  // about three settled refreshes, not twenty
  const size_t later = r.lookups() - settled;
  CHECK(later >= 2);
  CHECK(later <= 5);
  r.stop();
}
