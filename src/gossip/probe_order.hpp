// SWIM's randomised round-robin probe order: every member is probed once per round, each round in
// a fresh random order, and a member that joins mid-round lands at a random position among those
// not yet probed. This bounds the time to the first probe of a failed member (at most 2N - 1
// periods) while keeping the expected time of random choice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <vector>

namespace shoal::gossip {

// Members are named by their position in the member table (4 bytes instead of a string each).
class ProbeOrder {
 public:
  using Slot = uint32_t;

  // Adds a member that joined mid-round at a random not-yet-probed position.
  void add(Slot member, std::mt19937_64& rng);

  // The next member to probe: entries for which `probeable` is false (dead, left, gone) are
  // skipped and forgotten. At the end of a round, a new round is drawn from `candidates`.
  std::optional<Slot> next(const std::function<bool(Slot)>& probeable,
                           const std::function<std::vector<Slot>()>& candidates, std::mt19937_64& rng);

  // Forgets the round (positions changed): the next call draws a new one.
  void clear() {
    order_.clear();
    pos_ = 0;
  }
  size_t remaining_in_round() const { return order_.size() - pos_; }

 private:
  std::vector<Slot> order_;
  size_t pos_ = 0;
};

// A uniform index in [0, n) from the core's generator (n > 0). std::uniform_int_distribution is
// not specified bit-for-bit across standard libraries; this is, so traces replay anywhere.
size_t uniform_index(std::mt19937_64& rng, size_t n);

// Fisher-Yates with uniform_index.
template <class T>
void shuffle_in_place(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[uniform_index(rng, i)]);
}

}  // namespace shoal::gossip
