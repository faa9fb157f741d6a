// ElasticLoop: the run loop most data-parallel trainers want. Run a step; when the world changes
// (the step throws shoal::ViewChanged) or a collective fails or times out, roll back to the state after
// the last completed step, get the communicator of the next view (or of the same view, rebuilt),
// agree on the state, and continue. Every rank of a view resumes from the same step with the same state,
// whoever failed or joined:
//   - every rank of the previous view is in the new one (a join, a rebuild for the same view): nothing was
//     lost, so nobody rolls back to a checkpoint; the newest step any rank completed wins, and the lowest
//     rank holding it hands its live state to all (newcomers included);
//   - a rank of the previous view is gone (a death, a leave): `restore` when given (every rank loads the
//     same checkpointed step), else the live state as above;
//   - the first build of a job: `restore` when given, else rank 0's state.
// shoal::SettleRule (shoal/settle_rule.hpp) decides this, the same rule as Python's shoal.torch.Elastic
// (which keeps the live state after a loss unless told restore_after_loss). Settling costs one small
// allreduce; the state moves only where it differs: when every rank already
// holds the same state of the same step (the survivors of a loss in data-parallel training, a rebuild of
// the same view), compared by a 64-bit BLAKE2b digest of save()'s bytes, nothing is handed out and
// `load` is not called again (the `synced` hook still is).
//
//   shoal::ElasticLoop loop(*session, {
//       .step = [&](shoal::Communicator& c, uint64_t step) { compute(step); c.allreduce(std::span<float>(grads), shoal::ReduceOp::avg); apply(); },
//       .save = [&] { return serialize(model); },
//       .load = [&](const std::vector<std::byte>& bytes) { model = deserialize(bytes); },
//   });
//   loop.run(1000);
//
// Node health (shoal/health.hpp): the loop times every step (compute outside collectives, wait inside them,
// monotonic clock), and every StragglerOptions::exchange_every steps, after a step's `completed` hook, the
// ranks allgather those figures (72 bytes per rank) on the same communicator and evaluate the straggler
// rule, identically on every rank; health() holds the verdict, and the session's agent is told it (`shoal
// health`). Every rank of a job must pass the same StragglerOptions.
//
// Drain (shoal/drain_rule.hpp): between two steps the ranks agree whether a host drains; if one does, every
// rank saves the step (`drain_save`), the draining ranks wait until a peer holds it and run() returns with
// drained() true, and the others wait for the view without them and go on from the same step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shoal/api.hpp"
#include "shoal/communicator.hpp"
#include "shoal/health.hpp"
#include "shoal/session.hpp"

namespace shoal {
namespace session {
class StepHealth;
}

struct ElasticHooks {
  // One step on `comm`; throws what the communicator throws. The state may be half-updated when it does.
  std::function<void(Communicator& comm, uint64_t step)> step;
  // The state after a completed step, as bytes: the rollback point, and what a new rank 0 hands out.
  std::function<std::vector<std::byte>()> save;
  // Replace the state with one that save() produced (here or on another rank).
  std::function<void(const std::vector<std::byte>& state)> load;
  // Optional: after each completed step (the step number just done).
  std::function<void(uint64_t step)> completed;
  // Optional, for trainers that checkpoint (Session::begin_save): after every (re)build, the first
  // included, every rank calls it on the new communicator before the state sync. Return the step whose
  // state it restored, to resume after it (Session::restore gives every rank the same one), or nullopt
  // to adopt rank 0's state from memory as without this hook.
  std::function<std::optional<uint64_t>(Communicator& comm)> restore;
  // Optional: after every (re)build and state sync: the new ranks and how long it took since the world
  // changed (0 for the first build).
  std::function<void(const RankInfo& ranks, double rebuild_ms)> rebuilt;
  // Optional: after a (re)build whose state came live from a rank that trained before (not from restore):
  // the step to run next and that rank. Called on every rank, newcomers included.
  std::function<void(uint64_t next_step, int source_rank)> synced;
  // Optional, for trainers that checkpoint: at a drain (shoal/drain_rule.hpp) every rank saves the step just
  // completed through it (Session::begin_save) unless `completed` saved it already; a draining rank then
  // waits until a peer holds it, so that the survivors restore that very step.
  std::function<void(Communicator& comm, uint64_t step)> drain_save;
};

class SHOAL_API ElasticLoop {
 public:
  ElasticLoop(Session& session, ElasticHooks hooks);
  // With the straggler rule `health` (exchange_every 0: no timing exchange). Throws shoal::Error when the
  // options are out of range.
  ElasticLoop(Session& session, ElasticHooks hooks, const StragglerOptions& health);
  ~ElasticLoop();

  // Runs until the agreed step counter reaches `last_step`. Returns the number of rebuilds after the first
  // build. Throws shoal::Timeout when no usable view comes (see Session::communicator()).
  uint64_t run(uint64_t last_step);

  // The next step to run (every rank of the current view agrees on it after a sync).
  uint64_t next_step() const { return next_step_; }
  // run() returned because this rank's host drained (Session::drain_requested; shoal/drain_rule.hpp): its
  // last step's checkpoint is held by a peer, or the wait for it gave up.
  bool drained() const { return drained_; }

  // The latest straggler verdict and the figures behind it, the same on every rank of the view (empty
  // hosts before the first exchange of a view). From the loop's thread: its hooks, or after run().
  JobHealth health() const;

 private:
  // `root` hands out its step and its state.
  void sync_from(int root);
  // After a (re)build: restore, or sync from the live state (see the header comment).
  void settle_state();
  // After a (re)build: the figures start afresh for the new communicator.
  void restart_health();
  // Between two steps: agree on a drain (DrainRule). Returns true when this rank drained (run() returns), sets
  // `view_moved` when the view without the draining host came (the loop rebuilds at once).
  bool drain_boundary(bool& view_moved);

  Session& session_;
  ElasticHooks hooks_;
  std::shared_ptr<Communicator> comm_;
  std::vector<std::byte> snapshot_;
  uint64_t next_step_ = 0;
  std::vector<std::string> trained_in_;  // members of the view this rank last trained in (empty: none yet)
  std::unique_ptr<session::StepHealth> health_;
  bool drained_ = false;
};

}  // namespace shoal
