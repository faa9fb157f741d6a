// ViewLedger: what each tracked observer currently shows about each member, built from the member
// events its core announced, and whether every live member shows every other live member alive.
// Memory is observers x members records, so beyond a limit only a deterministic sample of observers
// is tracked (every k-th member).
#pragma once

#include <cstdint>
#include <vector>

#include "gossip/types.hpp"

namespace shoal::sim {

// One observer's latest record of one member.
struct SeenRecord {
  uint64_t incarnation = 0;
  uint32_t generation = 0;        // 0: never seen
  uint32_t dead_generation = 0;   // the highest generation this observer has shown dead or left
  uint64_t dead_incarnation = 0;  // the incarnation it showed dead_generation dead at (max: left)
  gossip::State state = gossip::State::alive;
};

class ViewLedger {
 public:
  // Tracks every observer while members <= max_tracked, else every ceil(members/max_tracked)-th one.
  ViewLedger(size_t members, size_t max_tracked);

  void resize(size_t members);
  size_t size() const { return live_.size(); }
  bool tracked(uint32_t observer) const { return observer % stride_ == 0; }
  size_t tracked_count() const;

  // Null when the observer is not tracked.
  const SeenRecord* get(uint32_t observer, uint32_t subject) const;
  // Records a new record (the caller has checked it) and keeps the convergence counts.
  void put(uint32_t observer, uint32_t subject, const SeenRecord& rec);
  // A restarted observer is a new process that has seen nothing yet.
  void reset_observer(uint32_t observer);

  // The harness reports each member's current generation and whether it runs (paused counts as running).
  void set_subject(uint32_t subject, uint32_t generation, bool live);
  bool live(uint32_t subject) const { return live_[subject] != 0; }
  uint32_t generation(uint32_t subject) const { return generation_[subject]; }
  size_t live_count() const { return live_count_; }

  // Every live tracked observer shows every other live member, at its current generation, alive.
  bool all_know_all() const;
  // How many live tracked observers show `subject` at generation `generation` in state `state`.
  size_t count_showing(uint32_t subject, uint32_t generation, gossip::State state) const;
  // How many live tracked observers other than `subject` there are (the denominator of count_showing).
  size_t live_tracked_others(uint32_t subject) const;

 private:
  bool counts(uint32_t observer, uint32_t subject, const SeenRecord& rec) const {
    return observer != subject && live_[subject] && rec.generation == generation_[subject] &&
           rec.state == gossip::State::alive;
  }

  size_t stride_ = 1;
  std::vector<std::vector<SeenRecord>> rows_;  // by observer; empty when not tracked
  std::vector<uint32_t> generation_;
  std::vector<uint8_t> live_;
  std::vector<uint32_t> alive_known_;  // by observer: live others it shows alive at their current generation
  size_t live_count_ = 0;
};

}  // namespace shoal::sim
