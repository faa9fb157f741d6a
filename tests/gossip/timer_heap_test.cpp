// The core's timer heap: deadlines fire in (deadline, token) order, cancelled timers never fire
// and never show as the next deadline, stale and empty keys are ignored, and slots are reused.
#include "gossip/timer_heap.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace shoal::gossip;

namespace {

Time us(int64_t v) { return Time(v); }

std::vector<std::string> fire_all(TimerHeap<std::string>& h, Time now) {
  std::vector<std::string> fired;
  std::string a;
  while (h.pop_due(now, a)) fired.push_back(a);
  return fired;
}

}  // namespace

TEST_CASE("timers fire in deadline order, ties in token order, and only once due") {
  TimerHeap<std::string> h;
  uint64_t token = 1;
  h.add(us(30), token++, "c");
  h.add(us(10), token++, "a");
  h.add(us(30), token++, "d");
  h.add(us(20), token++, "b");
  CHECK(h.next_at() == us(10));
  CHECK(fire_all(h, us(25)) == std::vector<std::string>{"a", "b"});
  CHECK(h.size() == 2);
  CHECK(fire_all(h, us(30)) == std::vector<std::string>{"c", "d"});
  CHECK(h.empty());
}

TEST_CASE("a cancelled timer neither fires nor shows as the next deadline; stale keys are ignored") {
  TimerHeap<std::string> h;
  const auto first = h.add(us(10), 1, "first");
  h.add(us(50), 2, "second");
  h.cancel(first);
  CHECK(h.size() == 1);
  CHECK(h.next_at() == us(50));
  // The cancelled timer's slot is reused; its old key must not cancel the new timer.
  const auto third = h.add(us(20), 3, "third");
  CHECK(third.slot == first.slot);
  h.cancel(first);
  h.cancel({});  // the empty key
  CHECK(h.size() == 2);
  CHECK(fire_all(h, us(100)) == std::vector<std::string>{"third", "second"});
  h.cancel(third);  // fired already: ignored
  CHECK(h.empty());
}

TEST_CASE("against an ordered map: 20,000 random adds, cancels and pops agree (seed 5)") {
  TimerHeap<uint64_t> h;
  std::map<std::pair<int64_t, uint64_t>, uint64_t> model;
  std::vector<TimerHeap<uint64_t>::Key> keys;
  std::mt19937_64 rng(5);
  uint64_t token = 1;
  int64_t now = 0;
  for (int step = 0; step < 20000; ++step) {
    const uint64_t r = rng() % 10;
    if (r < 5) {
      const int64_t at = now + static_cast<int64_t>(rng() % 1000);
      keys.push_back(h.add(us(at), token, token));
      model.emplace(std::make_pair(at, token), token);
      ++token;
    } else if (r < 8 && !keys.empty()) {
      const auto k = keys[rng() % keys.size()];
      h.cancel(k);
      model.erase({k.at.count(), k.token});
    } else {
      now += static_cast<int64_t>(rng() % 200);
      uint64_t fired = 0;
      while (h.pop_due(us(now), fired)) {
        REQUIRE_FALSE(model.empty());
        CHECK(model.begin()->second == fired);
        CHECK(model.begin()->first.first <= now);
        model.erase(model.begin());
      }
      CHECK((model.empty() || model.begin()->first.first > now));
    }
    REQUIRE(h.size() == model.size());
      if (!model.empty()) CHECK(h.next_at().count() == model.begin()->first.first);
  }
}
