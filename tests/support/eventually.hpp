// Test support: waiting for a condition with a deadline, polling every `poll` (10 ms by default), so a
// test never waits on a fixed sleep and never forever. One definition for every suite.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace shoal::test {

// Whether `cond` held before `timeout` passed (checked once more at the deadline).
inline bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout,
                       std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(poll);
  }
  return cond();
}

}  // namespace shoal::test
