// The randomised round-robin probe order: every member once per round, fresh order each round,
// newcomers within the current round, gone members skipped, and reproducible from the seed.
#include "gossip/probe_order.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

using namespace shoal::gossip;

namespace {

using Slot = ProbeOrder::Slot;

std::vector<Slot> names(int n) {
  std::vector<Slot> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<Slot>(i + 1));
  return v;
}

auto any = [](Slot) { return true; };

}  // namespace

TEST_CASE("every member is probed exactly once per round") {
  ProbeOrder order;
  std::mt19937_64 rng(7);
  const auto all = names(10);
  for (int round = 0; round < 3; ++round) {
    std::multiset<Slot> seen;
    for (int i = 0; i < 10; ++i)
      seen.insert(*order.next(
          any, [&] { return all; }, rng));
    CHECK(seen == std::multiset<Slot>(all.begin(), all.end()));
  }
}

TEST_CASE("each round is shuffled anew") {
  ProbeOrder order;
  std::mt19937_64 rng(7);
  const auto all = names(20);
  std::vector<Slot> r1, r2;
  for (int i = 0; i < 20; ++i)
    r1.push_back(*order.next(
        any, [&] { return all; }, rng));
  for (int i = 0; i < 20; ++i)
    r2.push_back(*order.next(
        any, [&] { return all; }, rng));
  CHECK(r1 != r2);
}

TEST_CASE("a member added mid-round is probed within that round") {
  ProbeOrder order;
  std::mt19937_64 rng(3);
  const auto all = names(10);
  for (int i = 0; i < 5; ++i)
    order.next(
        any, [&] { return all; }, rng);
  order.add(99, rng);
  std::set<Slot> rest;
  for (int i = 0; i < 6; ++i)
    rest.insert(*order.next(
        any, [&] { return all; }, rng));
  CHECK(rest.count(99) == 1);
  CHECK(rest.size() == 6);
}

TEST_CASE("members that are no longer probeable are skipped") {
  ProbeOrder order;
  std::mt19937_64 rng(3);
  const auto all = names(4);
  auto not_3 = [](Slot n) { return n != 3; };
  std::set<Slot> seen;
  for (int i = 0; i < 3; ++i)
    seen.insert(*order.next(
        not_3, [&] { return all; }, rng));
  CHECK(seen == std::set<Slot>{1, 2, 4});
}

TEST_CASE("with nobody to probe there is no target") {
  ProbeOrder order;
  std::mt19937_64 rng(1);
  CHECK_FALSE(order
                  .next(
                      any, [] { return std::vector<Slot>{}; }, rng)
                  .has_value());
}

TEST_CASE("the same seed gives the same order") {
  const auto all = names(50);
  auto run = [&](uint64_t seed) {
    ProbeOrder order;
    std::mt19937_64 rng(seed);
    std::vector<Slot> v;
    for (int i = 0; i < 100; ++i)
      v.push_back(*order.next(
          any, [&] { return all; }, rng));
    return v;
  };
  CHECK(run(11) == run(11));
  CHECK(run(11) != run(12));
}

TEST_CASE("uniform_index stays in range") {
  std::mt19937_64 rng(5);
  for (size_t n : {1u, 2u, 3u, 1000u}) {
    for (int i = 0; i < 1000; ++i) CHECK(uniform_index(rng, n) < n);
  }
}
