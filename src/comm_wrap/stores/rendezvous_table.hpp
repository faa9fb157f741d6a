// RendezvousTable: the state of the rendezvous store one agent serves, as a pure state machine. Keys
// live per epoch; a request either is answered at once or waits (parked under a waiter id) until a
// set completes it, its deadline passes, or its epoch is superseded. No IO, no clock: time comes in.
// Besides set/get/wait it serves what torch.distributed's Store needs: counters (add, with a long poll
// for a counter to move), check, delete and a count of keys by prefix.
//
// Epoch rule: requests for epochs older than the current one are answered VIEW_CHANGED at once; newer
// epochs are served (a store host may commit a view a moment after the ranks that use it), up to
// max_future_epochs ahead, so a stray client cannot make the table grow without bound.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous.pb.h"

namespace shoal::comm {

class RendezvousTable {
 public:
  using Time = std::chrono::microseconds;
  using Waiter = uint64_t;

  struct Limits {
    size_t max_keys_per_epoch = 65536;
    size_t max_value_bytes = 1 << 20;
    size_t max_bytes_per_epoch = 64 << 20;
    uint64_t max_future_epochs = 8;
    size_t max_waiters = 4096;
    uint32_t max_timeout_ms = 600'000;
  };

  // The bounds for a view of `world_size` ranks: `base` (the floor: a small job keeps the defaults), raised so
  // that a legal job of that size never meets them (per rank: kKeysPerRank keys, kWaitersPerRank parked waits,
  // kBytesPerRank bytes; plus headroom), the bytes at most kMaxBytesPerEpoch.
  static constexpr size_t kKeysPerRank = 16;
  static constexpr size_t kWaitersPerRank = 2;
  static constexpr size_t kBytesPerRank = 2048;
  static constexpr size_t kMaxBytesPerEpoch = size_t{1} << 30;
  static Limits limits_for_world(const Limits& base, uint64_t world_size);

  struct Reply {
    Waiter waiter = 0;
    wire::RendezvousResponse response;
  };

  struct Counters {
    uint64_t sets = 0;
    uint64_t gets = 0;
    uint64_t timeouts = 0;
    uint64_t view_changed = 0;
    uint64_t refused = 0;
  };

  RendezvousTable() = default;
  explicit RendezvousTable(Limits limits) : base_(limits), limits_(limits) {}

  // The committed view holds `world_size` ranks: the bounds become limits_for_world(the constructor's, it).
  void size_for_world(uint64_t world_size) { limits_ = limits_for_world(base_, world_size); }
  const Limits& limits() const { return limits_; }

  // Answers `request` now, or parks it under `waiter` (nullopt). Replies to parked waiters that the
  // request completed (a SET) are appended to `completed`.
  std::optional<wire::RendezvousResponse> handle(Waiter waiter, const wire::RendezvousRequest& request, Time now,
                                                 std::vector<Reply>& completed);
  // The committed epoch is now `epoch`: older tables go, their waiters are answered VIEW_CHANGED.
  void advance(uint64_t epoch, std::vector<Reply>& out);
  // Waiters whose deadline is at or before `now` are answered TIMEOUT, naming their missing keys.
  void expire(Time now, std::vector<Reply>& out);
  // The waiter's connection went away.
  void cancel(Waiter waiter);

  std::optional<Time> next_deadline() const;
  uint64_t epoch() const { return current_epoch_; }
  size_t waiting() const { return waiters_.size(); }
  size_t epochs_held() const { return epochs_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  struct Parked {
    uint64_t epoch = 0;
    wire::RendezvousRequest request;
    Time deadline{0};
  };
  struct EpochTable {
    std::map<std::string, std::string> values;
    size_t bytes = 0;
  };

  wire::RendezvousResponse refuse(const std::string& why);
  wire::RendezvousResponse number_reply(int64_t n) const;
  // A counter's value: 0 when absent, nullopt when the key holds something else than decimal text.
  static std::optional<int64_t> counter_value(const EpochTable& table, const std::string& key);
  std::optional<wire::RendezvousResponse> add(Waiter waiter, EpochTable& table, const wire::RendezvousRequest& r,
                                              Time now, std::vector<Reply>& completed);
  wire::RendezvousResponse view_changed(uint64_t epoch) const;
  // OK with the values when every key is present, else nullopt.
  std::optional<wire::RendezvousResponse> try_answer(const EpochTable& table, const wire::RendezvousRequest& r) const;
  void complete_waiters(uint64_t epoch, std::vector<Reply>& out);

  Limits base_;
  Limits limits_;
  uint64_t current_epoch_ = 0;
  std::map<uint64_t, EpochTable> epochs_;
  std::map<Waiter, Parked> waiters_;
  Counters counters_;
};

}  // namespace shoal::comm
