// The elastic run loop: step, roll back on a view change, rebuild, settle the state (live or restored).
#include "shoal/elastic_loop.hpp"

#include "shoal/drain_rule.hpp"
#include "shoal/settle_rule.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <span>

#include <sodium.h>

#include "session/session_core.hpp"
#include "session/step_health.hpp"
#include "wire/cluster_key.hpp"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// 64 bits of the state's BLAKE2b digest (libsodium): whether two ranks hold the same state.
uint64_t state_digest(const std::vector<std::byte>& state) {
  (void)wire::init_sodium();
  unsigned char out[crypto_generichash_BYTES_MIN];
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(state.data()), state.size(), nullptr, 0);
  uint64_t v = 0;
  std::memcpy(&v, out, sizeof v);
  return v;
}

}  // namespace

ElasticLoop::ElasticLoop(Session& session, ElasticHooks hooks) : ElasticLoop(session, std::move(hooks), {}) {}

ElasticLoop::ElasticLoop(Session& session, ElasticHooks hooks, const StragglerOptions& health)
    : session_(session), hooks_(std::move(hooks)), health_(std::make_unique<shoal::session::StepHealth>(health)) {
  if (!hooks_.step || !hooks_.save || !hooks_.load) throw Error("ElasticLoop needs the step, save and load hooks");
}

ElasticLoop::~ElasticLoop() = default;

JobHealth ElasticLoop::health() const { return health_->health(); }

void ElasticLoop::restart_health() {
  const RankInfo ranks = session_.ranks();
  std::vector<std::string> rank_hosts;
  if (auto* c = dynamic_cast<session::SessionCore*>(&session_)) rank_hosts = c->rank_hosts(*comm_);
  if (rank_hosts.size() != static_cast<size_t>(comm_->world_size())) {
    // A session of another kind: one rank per member when the counts say so, else ranks as hosts.
    rank_hosts = ranks.members;
    if (rank_hosts.size() != static_cast<size_t>(comm_->world_size())) {
      rank_hosts.clear();
      for (int r = 0; r < comm_->world_size(); ++r) rank_hosts.push_back("rank-" + std::to_string(r));
    }
  }
  auto* core = dynamic_cast<session::SessionCore*>(&session_);
  health_->restart(std::move(rank_hosts), comm_->epoch(), ranks.attempt, core ? core->health_keys() : nullptr);
}

void ElasticLoop::sync_from(int root) {
  uint64_t header[2] = {next_step_, snapshot_.size()};
  comm_->broadcast(header, sizeof(header), root);
  std::vector<std::byte> state(header[1]);
  if (comm_->rank() == root) state = snapshot_;
  if (!state.empty()) comm_->broadcast(state.data(), state.size(), root);
  if (comm_->rank() != root) {
    hooks_.load(state);
    snapshot_ = std::move(state);
    next_step_ = header[0];
  }
}

void ElasticLoop::settle_state() {
  const RankInfo now = session_.ranks();
  // Did this rank train before, and is every rank it trained with still here? SettleRule's one allreduce
  // tells every rank the same answers; it is also the new communicator's first collective, so a peer whose
  // own build failed fails it at once, before any state moves. A failure can cut a step short on some ranks
  // only: the newest completed step wins, so no rank redoes a step it finished.
  SettleFacts facts;
  facts.holds_state = !trained_in_.empty();
  for (const auto& name : trained_in_) {
    if (std::find(now.members.begin(), now.members.end(), name) == now.members.end()) facts.kept_peers = false;
  }
  facts.next_step = next_step_;
  facts.digest = facts.holds_state ? state_digest(snapshot_) : 0;
  // This loop's documented rule: a trainer that restores does so at the start and after every loss.
  facts.can_restore = static_cast<bool>(hooks_.restore);
  facts.restore_after_loss = facts.can_restore;
  const SettleDecision d = SettleRule::agree(*comm_, facts);
  if (d.restore) {
    if (const auto restored = hooks_.restore(*comm_)) {
      next_step_ = *restored + 1;
      snapshot_ = hooks_.save();
      return;
    }
  }
  if (d.hand_out) sync_from(d.source_rank);
  if (d.anyone_holds_state && hooks_.synced) hooks_.synced(next_step_, d.source_rank);
}

bool ElasticLoop::drain_boundary(bool& view_moved) {
  const bool mine = session_.drain_requested();
  const DrainDecision d = DrainRule::agree(*comm_, mine);
  if (!d.drain) return false;
  const uint64_t step = next_step_ - 1;
  if (hooks_.drain_save) hooks_.drain_save(*comm_, step);
  if (mine) {
    // The survivors restore this step: it must be held by a peer before this host leaves.
    (void)session_.wait_checkpoint_safe(step, DrainRule::kWait);
    session_.report_drained(step);
    drained_ = true;
    return true;
  }
  if (d.everyone) return false;
  try {
    // Until every draining host is out (hosts that drain together may leave in more than one view).
    const auto deadline = std::chrono::steady_clock::now() + DrainRule::kWait;
    const int world_after = comm_->world_size() - static_cast<int>(d.draining_ranks);
    RankInfo now = session_.wait_for_view(comm_->epoch(), DrainRule::kWait);
    while (now.world_size > world_after && std::chrono::steady_clock::now() < deadline) {
      now = session_.wait_for_view(now.epoch, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                   deadline - std::chrono::steady_clock::now()));
    }
    view_moved = true;
  } catch (const Timeout&) {
    view_moved = session_.latest_epoch() > comm_->epoch();
    // The draining host did not leave in time: train on in this view; its leave is then an ordinary one.
  }
  return false;
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
      settle_state();
    } catch (const ViewChanged&) {
      continue;  // the world moved again before it settled: build for the next view
    } catch (const Timeout& e) {
      // A peer that never came to the restore or the sync: give this communicator up, so that
      // communicator() rebuilds (for the same view when every member lives, once all ranks are there).
      comm_->abort(std::string("the rebuild timed out: ") + e.what());
      continue;
    }
    trained_in_ = session_.ranks().members;
    restart_health();
    if (hooks_.rebuilt) hooks_.rebuilt(session_.ranks(), first ? 0.0 : ms_since(changed_at));
    if (!first) ++rebuilds;
    first = false;

    try {
      bool view_moved = false;
      while (next_step_ < last_step && !view_moved) {
        health_->step_began(*comm_);
        hooks_.step(*comm_, next_step_);
        health_->step_ended(*comm_);
        snapshot_ = hooks_.save();
        ++next_step_;
        if (hooks_.completed) hooks_.completed(next_step_ - 1);
        // Between steps, so that a view change here costs no step: the state is the completed one.
        if (next_step_ < last_step && health_->exchange_if_due(*comm_, next_step_ - 1)) {
          if (auto* core = dynamic_cast<session::SessionCore*>(&session_)) core->report_health(health_->health());
        }
        // Between steps too: a drain leaves at this boundary, with no step in flight.
        if (next_step_ < last_step && drain_boundary(view_moved)) return rebuilds;
      }
      if (view_moved) {
        changed_at = Clock::now();
        continue;  // the view without the drained host: build for it, nothing to roll back
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
