// The elastic run loop: step, roll back on a view change, rebuild, adopt rank 0's state.
#include "shoal/elastic_loop.hpp"

#include <chrono>
#include <cstring>

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

ElasticLoop::ElasticLoop(Session& session, ElasticHooks hooks) : session_(session), hooks_(std::move(hooks)) {
  if (!hooks_.step || !hooks_.save || !hooks_.load) throw Error("ElasticLoop needs the step, save and load hooks");
}

void ElasticLoop::sync_from_rank0() {
  uint64_t header[2] = {next_step_, snapshot_.size()};
  comm_->broadcast(header, sizeof(header), 0);
  std::vector<std::byte> state(header[1]);
  if (comm_->rank() == 0) state = snapshot_;
  if (!state.empty()) comm_->broadcast(state.data(), state.size(), 0);
  if (comm_->rank() != 0) {
    hooks_.load(state);
    snapshot_ = std::move(state);
    next_step_ = header[0];
  }
}

uint64_t ElasticLoop::run(uint64_t last_step) {
  uint64_t rebuilds = 0;
  snapshot_ = hooks_.save();
  bool first = true;
  Clock::time_point changed_at = Clock::now();
  while (true) {
    // (Re)build and agree on the state: rank 0 of the new view hands out its step and its state.
    try {
      comm_ = session_.communicator();  // its Timeout (no usable view) ends the run
    } catch (const ViewChanged&) {
      continue;  // the world moved again before it settled: build for the next view
    }
    try {
      // Every rank's connections work before any state moves: a peer whose own build failed (and that
      // waits to rebuild) fails this at once, not the restore's exchange at its timeout.
      comm_->barrier();
      std::optional<uint64_t> restored;
      if (hooks_.restore) restored = hooks_.restore(*comm_);
      if (restored) {
        next_step_ = *restored + 1;
        snapshot_ = hooks_.save();
      } else {
        sync_from_rank0();
      }
    } catch (const ViewChanged&) {
      continue;  // the world moved again before it settled: build for the next view
    } catch (const Timeout& e) {
      // A peer that never came to the restore or the sync: give this communicator up, so that
      // communicator() rebuilds (for the same view when every member lives, once all ranks are there).
      comm_->abort(std::string("the rebuild timed out: ") + e.what());
      continue;
    }
    if (hooks_.rebuilt) hooks_.rebuilt(session_.ranks(), first ? 0.0 : ms_since(changed_at));
    if (!first) ++rebuilds;
    first = false;

    try {
      while (next_step_ < last_step) {
        hooks_.step(*comm_, next_step_);
        snapshot_ = hooks_.save();
        ++next_step_;
        if (hooks_.completed) hooks_.completed(next_step_ - 1);
      }
      // Done, but a rank that leaves now could strand a peer whose last collective has not completed
      // yet (its ring step still needs us): the peer would roll back and redo the step without us.
      // Wait until every rank is through; a failure now cannot undo a completed step, so it is ignored.
      try {
        comm_->barrier();
      } catch (const ViewChanged&) {
      }
      return rebuilds;
    } catch (const ViewChanged&) {
      changed_at = Clock::now();
      hooks_.load(snapshot_);  // the step in flight may have half-updated the state
    } catch (const Timeout&) {
      // A collective that timed out aborted its communicator: communicator() rebuilds it (for the same
      // view when every member lives). Any other timeout is the caller's own.
      if (!comm_->aborted()) throw;
      changed_at = Clock::now();
      hooks_.load(snapshot_);
    }
  }
}

}  // namespace shoal
