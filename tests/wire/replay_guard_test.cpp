// The replay guard: fresh once, replayed after, stale outside the time or counter window, and bounded
// memory that never lets a replay through when it forgets a sender.
#include "wire/replay_guard.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

using namespace shoal::wire;

namespace {

constexpr int64_t kT0 = 1'700'000'000'000;  // some unix ms

SenderId sender(unsigned char n) {
  SenderId id{};
  id.fill(n);
  return id;
}

}  // namespace

TEST_CASE("a packet is fresh the first time and replayed the second") {
  ReplayGuard guard;
  CHECK(guard.check_and_record(sender(1), 1, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 1, kT0, kT0) == ReplayVerdict::replayed);
  CHECK(guard.check_and_record(sender(1), 2, kT0, kT0 + 5) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 2, kT0, kT0 + 10) == ReplayVerdict::replayed);
}

TEST_CASE("senders have independent counters") {
  ReplayGuard guard;
  CHECK(guard.check_and_record(sender(1), 7, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(2), 7, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(2), 7, kT0, kT0) == ReplayVerdict::replayed);
  CHECK(guard.sender_count() == 2);
}

TEST_CASE("a packet sent more than the window before or after now is stale, at the window it is fresh") {
  ReplayGuard guard(60'000);
  CHECK(guard.check_and_record(sender(1), 1, kT0 - 60'001, kT0) == ReplayVerdict::stale);
  CHECK(guard.check_and_record(sender(1), 2, kT0 + 60'001, kT0) == ReplayVerdict::stale);
  CHECK(guard.sender_count() == 0);  // stale packets are not recorded
  CHECK(guard.check_and_record(sender(1), 3, kT0 - 60'000, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 4, kT0 + 60'000, kT0) == ReplayVerdict::fresh);
}

TEST_CASE("timestamps at the ends of int64 are stale, not an overflow") {
  ReplayGuard guard;
  constexpr auto lo = std::numeric_limits<int64_t>::min();
  constexpr auto hi = std::numeric_limits<int64_t>::max();
  CHECK(guard.check_and_record(sender(1), 1, lo, hi) == ReplayVerdict::stale);
  CHECK(guard.check_and_record(sender(1), 1, hi, lo) == ReplayVerdict::stale);
  CHECK(guard.check_and_record(sender(1), 1, hi, kT0) == ReplayVerdict::stale);
}

TEST_CASE("a first packet stamped with the lowest int64 is judged by the time window alone (found by fuzzing)") {
  ReplayGuard guard;
  constexpr auto lo = std::numeric_limits<int64_t>::min();
  CHECK(guard.check_and_record(sender(1), 1, lo, lo) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 1, lo, lo) == ReplayVerdict::replayed);
}

TEST_CASE("packets out of order within the counter window are accepted once each") {
  ReplayGuard guard;
  CHECK(guard.check_and_record(sender(1), 100, kT0, kT0) == ReplayVerdict::fresh);
  for (uint64_t c = 99; c > 100 - kReplayWindowCounters; --c) {
    CHECK(guard.check_and_record(sender(1), c, kT0, kT0) == ReplayVerdict::fresh);
  }
  for (uint64_t c = 100; c > 100 - kReplayWindowCounters; --c) {
    CHECK(guard.check_and_record(sender(1), c, kT0, kT0) == ReplayVerdict::replayed);
  }
}

TEST_CASE("a counter at least 64 behind the newest is stale even if never seen") {
  ReplayGuard guard;
  CHECK(guard.check_and_record(sender(1), 100, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 100 - kReplayWindowCounters, kT0, kT0) == ReplayVerdict::stale);
  CHECK(guard.check_and_record(sender(1), 1, kT0, kT0) == ReplayVerdict::stale);
}

TEST_CASE("a jump ahead slides the window: what it passed is stale, gaps inside it are fresh once") {
  ReplayGuard guard;
  CHECK(guard.check_and_record(sender(1), 1, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 2, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 10, kT0, kT0) == ReplayVerdict::fresh);  // shift by 8
  CHECK(guard.check_and_record(sender(1), 2, kT0, kT0) == ReplayVerdict::replayed);
  CHECK(guard.check_and_record(sender(1), 5, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 1000, kT0, kT0) == ReplayVerdict::fresh);  // shift past the window
  CHECK(guard.check_and_record(sender(1), 10, kT0, kT0) == ReplayVerdict::stale);
  CHECK(guard.check_and_record(sender(1), 999, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 1000, kT0, kT0) == ReplayVerdict::replayed);
}

TEST_CASE("the largest counter is handled like any other") {
  ReplayGuard guard;
  constexpr auto top = std::numeric_limits<uint64_t>::max();
  CHECK(guard.check_and_record(sender(1), top, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), top, kT0, kT0) == ReplayVerdict::replayed);
  CHECK(guard.check_and_record(sender(1), top - 1, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(1), 0, kT0, kT0) == ReplayVerdict::stale);
}

TEST_CASE("the table never holds more than max_senders; a full table evicts the least recently heard") {
  ReplayGuard guard(60'000, 3);
  for (unsigned char s = 1; s <= 3; ++s) {
    CHECK(guard.check_and_record(sender(s), 1, kT0 + s, kT0 + s) == ReplayVerdict::fresh);
  }
  // Sender 1 is heard again, so sender 2 is now the least recently heard.
  CHECK(guard.check_and_record(sender(1), 2, kT0 + 10, kT0 + 10) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(4), 1, kT0 + 20, kT0 + 20) == ReplayVerdict::fresh);
  CHECK(guard.sender_count() == 3);
  CHECK(guard.forced_evictions() == 1);
  CHECK(guard.check_and_record(sender(1), 2, kT0 + 10, kT0 + 21) == ReplayVerdict::replayed);  // kept
  CHECK(guard.check_and_record(sender(3), 1, kT0 + 3, kT0 + 21) == ReplayVerdict::replayed);   // kept

  for (unsigned char s = 5; s < 200; ++s) {
    CHECK(guard.check_and_record(sender(s), 1, kT0 + 100 + s, kT0 + 100 + s) == ReplayVerdict::fresh);
    CHECK(guard.sender_count() <= 3);
  }
}

TEST_CASE("a replay of an evicted sender's packet is refused as stale, and its new packets are fresh") {
  ReplayGuard guard(60'000, 2);
  CHECK(guard.check_and_record(sender(1), 1, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(2), 1, kT0 + 1, kT0 + 1) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(3), 1, kT0 + 2, kT0 + 2) == ReplayVerdict::fresh);  // evicts sender 1
  CHECK(guard.forced_evictions() == 1);
  // Without the forgotten-sender horizon this replay, well inside the time window, would be fresh.
  CHECK(guard.check_and_record(sender(1), 1, kT0, kT0 + 5) == ReplayVerdict::stale);
  CHECK(guard.check_and_record(sender(1), 2, kT0 + 6, kT0 + 6) == ReplayVerdict::fresh);
}

TEST_CASE("senders quiet for longer than the window are forgotten before any live one is evicted") {
  ReplayGuard guard(60'000, 2);
  CHECK(guard.check_and_record(sender(1), 1, kT0, kT0) == ReplayVerdict::fresh);
  CHECK(guard.check_and_record(sender(2), 1, kT0 + 30'000, kT0 + 30'000) == ReplayVerdict::fresh);
  // At +61 s sender 1 has expired, sender 2 has not.
  CHECK(guard.check_and_record(sender(3), 1, kT0 + 61'000, kT0 + 61'000) == ReplayVerdict::fresh);
  CHECK(guard.forced_evictions() == 0);
  CHECK(guard.sender_count() == 2);
  CHECK(guard.check_and_record(sender(2), 1, kT0 + 30'000, kT0 + 61'001) == ReplayVerdict::replayed);
  // The forgotten sender's old packet is stale by time anyway.
  CHECK(guard.check_and_record(sender(1), 1, kT0, kT0 + 61'002) == ReplayVerdict::stale);
}

TEST_CASE("expired senders are forgotten when a new one arrives, even below the bound") {
  ReplayGuard guard(1'000, 100);
  for (unsigned char s = 1; s <= 50; ++s) {
    CHECK(guard.check_and_record(sender(s), 1, kT0, kT0) == ReplayVerdict::fresh);
  }
  CHECK(guard.sender_count() == 50);
  CHECK(guard.check_and_record(sender(77), 1, kT0 + 5'000, kT0 + 5'000) == ReplayVerdict::fresh);
  CHECK(guard.sender_count() == 1);
  CHECK(guard.forced_evictions() == 0);
}

TEST_CASE("after a forced eviction a new sender whose clock is behind waits until it passes the horizon") {
  ReplayGuard guard(60'000, 1);
  CHECK(guard.check_and_record(sender(1), 1, kT0 + 500, kT0) == ReplayVerdict::fresh);  // its clock is ahead
  CHECK(guard.check_and_record(sender(2), 1, kT0 + 501, kT0) == ReplayVerdict::fresh);  // evicts 1
  CHECK(guard.check_and_record(sender(3), 1, kT0 + 100, kT0 + 1) == ReplayVerdict::stale);
  CHECK(guard.check_and_record(sender(3), 2, kT0 + 502, kT0 + 2) == ReplayVerdict::fresh);
}
