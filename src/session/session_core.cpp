// The session's core: failure notices, view changes, and communicators built per committed view.
#include "session/session_core.hpp"

#include "base/log.hpp"
#include "comm_wrap/session_communicator.hpp"
#include "comm_wrap/stores/scoped_rendezvous_store.hpp"
#include "ranks/rank_table.hpp"
#include "session/epoch_store.hpp"
#include "session/rendezvous_client.hpp"
#include "session/state_seal.hpp"

namespace shoal::session {

uint64_t SessionCore::latest_epoch() const {
  std::lock_guard lock(mu_);
  return latest_ ? latest_->epoch() : 0;
}

void SessionCore::on_view_change(std::function<void(uint64_t)> callback) {
  std::lock_guard lock(mu_);
  callbacks_.push_back(std::move(callback));
}

void SessionCore::view_committed(const membership::View& view) {
  std::vector<std::function<void(uint64_t)>> callbacks;
  {
    std::lock_guard lock(mu_);
    if (checkpoints_) checkpoints_->follow_view(view.lineage());  // before any trainer can use the view
    latest_ = view;
    if (comm_ && comm_->epoch() < view.epoch() && !comm_->aborted()) {
      // A member that failed was aborted for already (member_failed); what is left is a view that adds
      // members or drops departed ones, whose peers can finish the collective in flight.
      log::comm().info("epoch {} committed: aborting the communicator of epoch {}", view.epoch(), comm_->epoch());
      comm_->abort_after("superseded by the view of epoch " + std::to_string(view.epoch()), kFinishGrace);
    }
    callbacks = callbacks_;
  }
  changed_.notify_all();
  for (const auto& cb : callbacks) cb(view.epoch());
}

void SessionCore::member_failed(const std::string& name, uint64_t generation, const char* state) {
  std::lock_guard lock(mu_);
  if (!latest_) return;
  const auto* m = latest_->find(name);
  if (!m || m->generation != generation) return;
  // The view's communicator cannot complete another collective: stop the ranks' waits now, not at the
  // collective timeout. The next view (without this member) is what they rebuild on.
  mark_broken(latest_->epoch());
  unconfirmed_.emplace(name, generation);
  if (comm_ && !comm_->aborted()) {
    log::comm().info("member {} is {}: aborting the communicator of epoch {}", name, state, comm_->epoch());
    // A member that left gracefully finished its last collective before it left: the peers may too.
    if (std::string_view(state) == "left") {
      comm_->abort_after("member " + name + " is " + state, kFinishGrace);
    } else {
      comm_->abort("member " + name + " is " + state);
    }
  }
  changed_.notify_all();
}

void SessionCore::member_back(const std::string& name, uint64_t generation) {
  std::lock_guard lock(mu_);
  if (!latest_ || latest_->epoch() != broken_epoch_ || !fresh_failure(broken_epoch_)) return;
  if (unconfirmed_.erase({name, generation}) == 0 || !unconfirmed_.empty()) return;
  end_grace(("member " + name + " answers again").c_str());
}

void SessionCore::failures_taken_back(uint64_t epoch) {
  std::lock_guard lock(mu_);
  if (epoch != broken_epoch_ || !fresh_failure(epoch)) return;
  unconfirmed_.clear();
  end_grace("the agent says every member reported failed answers again");
}

void SessionCore::end_grace(const char* why) {
  log::comm().info("{}: nobody of epoch {} is lost, so no view will remove anyone; rebuilding it now", why,
                   broken_epoch_);
  broken_since_ = Clock::now() - kUnconfirmedFailureGrace - std::chrono::milliseconds(1);
  changed_.notify_all();
}

void SessionCore::epoch_broken(uint64_t epoch, const std::string& why) {
  std::lock_guard lock(mu_);
  mark_broken(epoch);
  if (comm_ && !comm_->aborted() && comm_->epoch() <= epoch) {
    log::comm().info("{}: aborting the communicator of epoch {}", why, comm_->epoch());
    comm_->abort(why);
  }
  changed_.notify_all();
}

void SessionCore::source_stopped(const std::string& why) {
  std::lock_guard lock(mu_);
  stopped_ = why.empty() ? "the agent stopped" : why;
  if (comm_) comm_->abort(stopped_);
  changed_.notify_all();
}

void SessionCore::set_identity(SessionIdentity identity) {
  std::lock_guard lock(mu_);
  id_ = std::move(identity);
  checkpoints_ = std::make_unique<SessionCheckpoints>(id_.checkpoints);
  if (latest_) checkpoints_->follow_view(latest_->lineage());
}

std::shared_ptr<const wire::KeyRing> SessionCore::health_keys() const {
  std::lock_guard lock(mu_);
  return id_.keys;
}

std::optional<uint32_t> SessionCore::checkpoint_replicas() const {
  std::lock_guard lock(mu_);
  return id_.checkpoints.replicas;
}

std::unique_ptr<CheckpointSave> SessionCore::begin_save(Communicator& comm, uint64_t step,
                                                       const std::vector<CheckpointBuffer>& buffers) {
  {
    std::lock_guard lock(mu_);
    if (comm_.get() != &comm) {
      throw ViewChanged(comm.epoch(), "begin_save: the communicator of epoch " + std::to_string(comm.epoch()) +
                                          " is not the session's current one");
    }
  }
  return checkpoints_->begin_save(step, static_cast<uint32_t>(comm.rank()), static_cast<uint32_t>(comm.world_size()),
                                  buffers);
}

void SessionCore::prepare_save(Communicator& comm, const std::vector<CheckpointBuffer>& buffers) {
  (void)view_of(comm, "prepare_save");
  checkpoints_->prepare(static_cast<uint32_t>(comm.rank()), static_cast<uint32_t>(comm.world_size()), buffers);
}

std::vector<std::string> SessionCore::rank_hosts(const Communicator& comm) const {
  std::lock_guard lock(mu_);
  if (comm_.get() != &comm || !comm_view_ || comm_view_->epoch() != comm.epoch()) return {};
  std::vector<std::string> out;
  const ranks::RankTable table(*comm_view_);
  for (const auto& r : table.ranks()) out.push_back(r.member);
  return out;
}

std::optional<RestoredCheckpoint> SessionCore::restore(Communicator& comm, std::optional<uint32_t> saved_rank) {
  return restore_with(comm, saved_rank, nullptr);
}

std::optional<RestoredCheckpoint> SessionCore::restore_into(Communicator& comm, const RestorePlacer& place,
                                                           std::optional<uint32_t> saved_rank) {
  return restore_with(comm, saved_rank, &place);
}

bool SessionCore::wait_checkpoint_safe(uint64_t step, std::chrono::milliseconds timeout) {
  SessionCheckpoints* checkpoints = nullptr;
  {
    std::lock_guard lock(mu_);
    checkpoints = checkpoints_.get();
  }
  return checkpoints != nullptr && checkpoints->wait_safe(step, timeout);
}

// Rank r's checkpoint report must come from the member the view gives rank r, naming that member's agent.
static std::vector<ckpt::ExpectedHolder> expected_holders(const membership::View& view) {
  std::vector<ckpt::ExpectedHolder> expected;
  const ranks::RankTable table(view);
  for (const auto& r : table.ranks()) {
    const membership::ViewMember* m = view.find(r.member);
    expected.push_back({r.member, m != nullptr ? m->addr : std::string()});
  }
  return expected;
}

SessionCheckpoints& SessionCore::checkpoints_or_throw(const char* what) {
  std::lock_guard lock(mu_);
  if (!checkpoints_) throw Error(std::string(what) + ": the session has not joined a view yet");
  return *checkpoints_;
}

std::optional<RestorePoint> SessionCore::agree_restore(Communicator& comm) {
  return agree_restore_at_most(comm, UINT64_MAX);
}

std::optional<RestorePoint> SessionCore::agree_restore_at_most(Communicator& comm, uint64_t at_most_step) {
  const auto [view, attempt] = view_of(comm, "agree_restore");
  NetworkRendezvousStore epoch_store(store_options(view));
  comm::ScopedRendezvousStore store(epoch_store, scope(attempt));
  const auto expected = expected_holders(view);
  return checkpoints_or_throw("agree_restore").agree(comm, attempt, store, expected, at_most_step);
}

std::vector<RestoredCheckpoint::Entry> SessionCore::version_buffers(uint64_t step, uint32_t saved_rank) {
  return checkpoints_or_throw("version_buffers").version_buffers(step, saved_rank);
}

std::string SessionCore::read_ranges(uint64_t step, uint32_t saved_rank, const std::vector<ByteRange>& ranges) {
  return checkpoints_or_throw("read_ranges").read_ranges(step, saved_rank, ranges);
}

std::pair<membership::View, uint32_t> SessionCore::view_of(const Communicator& comm, const char* what) const {
  {
    std::lock_guard lock(mu_);
    if (comm_.get() == &comm && comm_view_ && comm_view_->epoch() == comm.epoch()) return {*comm_view_, comm_attempt_};
  }
  throw ViewChanged(comm.epoch(), std::string(what) + ": the communicator of epoch " + std::to_string(comm.epoch()) +
                                      " is not the session's current one");
}

std::string SessionCore::scope(uint32_t attempt) const { return id_.key_scope + comm::attempt_prefix(attempt); }

std::unique_ptr<EpochStore> SessionCore::store(Communicator& comm) {
  const auto [view, attempt] = view_of(comm, "store");
  return std::make_unique<SessionEpochStore>(store_options(view), attempt, scope(attempt));
}

std::vector<std::byte> SessionCore::state_seal(Communicator& comm, int sender, std::span<const std::byte> data) {
  const auto [view, attempt] = view_of(comm, "state_seal");
  const StatePlace place{comm.epoch(), attempt, static_cast<uint32_t>(sender), static_cast<uint32_t>(comm.world_size())};
  return seal_state(data, health_keys().get(), place);
}

bool SessionCore::state_seal_valid(Communicator& comm, int sender, std::span<const std::byte> data,
                                   std::span<const std::byte> seal) {
  const auto [view, attempt] = view_of(comm, "state_seal_valid");
  if (sender < 0 || sender >= comm.world_size()) return false;
  const StatePlace place{comm.epoch(), attempt, static_cast<uint32_t>(sender), static_cast<uint32_t>(comm.world_size())};
  const auto keys = health_keys();
  const bool valid = session::state_seal_valid(data, seal, keys.get(), place);
  if (!valid) {
    log::comm().warn(
        "a state handed over by rank {} of epoch {} does not carry a valid seal{}: refused before "
        "parsing",
        sender, comm.epoch(), keys ? "" : " (this cluster has no key, and the state came sealed)");
  }
  return valid;
}

std::optional<RestoredCheckpoint> SessionCore::restore_with(Communicator& comm, std::optional<uint32_t> saved_rank,
                                                            const RestorePlacer* place) {
  const auto [view, attempt] = view_of(comm, "restore");
  NetworkRendezvousStore epoch_store(store_options(view));
  comm::ScopedRendezvousStore store(epoch_store, scope(attempt));
  const auto expected = expected_holders(view);
  return checkpoints_->restore(comm, attempt, store, expected, saved_rank, place);
}

NetworkRendezvousStore::Options SessionCore::store_options(const membership::View& view) {
  const ranks::RankTable table(view);
  const uint64_t epoch = view.epoch();
  NetworkRendezvousStore::Options store_opt;
  store_opt.store_addr = table.nodes().front().member.addr;  // rank 0's agent serves the epoch
  store_opt.epoch = epoch;
  store_opt.hello = id_.rendezvous_hello;
  store_opt.superseded = [this, epoch] {
    std::lock_guard lock(mu_);
    return !stopped_.empty() || (latest_ && latest_->epoch() > epoch) || fresh_failure(epoch);
  };
  return store_opt;
}

void SessionCore::mark_broken(uint64_t epoch) {
  if (epoch < broken_epoch_) return;
  if (epoch > broken_epoch_) unconfirmed_.clear();
  broken_epoch_ = epoch;
  broken_since_ = Clock::now();
}

bool SessionCore::fresh_failure(uint64_t epoch) const { return rebuild_state().fresh_failure(epoch, Clock::now()); }

bool SessionCore::includes_me(const membership::View& view) const {
  const auto* me = view.find(id_.name);
  return me && me->generation == id_.generation && me->slots > id_.slot;
}

bool SessionCore::usable(const membership::View& view) const {
  return !fresh_failure(view.epoch()) && includes_me(view);
}

RankInfo SessionCore::rank_info(const membership::View& view) const {
  const ranks::RankTable table(view);
  RankInfo info;
  info.epoch = view.epoch();
  info.view_hash = view.hash();
  info.world_size = static_cast<int>(table.world_size());
  info.node_count = static_cast<int>(table.node_count());
  info.master_addr = table.master_addr();
  for (const auto& node : table.nodes()) info.members.push_back(node.member.name);
  if (const auto* me = table.find(id_.name, id_.slot)) {
    info.rank = static_cast<int>(me->global_rank);
    info.local_rank = static_cast<int>(me->local_rank);
    info.local_world_size = static_cast<int>(me->local_world_size);
    info.node_rank = static_cast<int>(me->node_rank);
  }
  return info;
}

RankInfo SessionCore::wait_for_view(uint64_t after_epoch, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const bool ok = changed_.wait_for(lock, timeout, [&] {
    return !stopped_.empty() || (latest_ && latest_->epoch() > after_epoch && includes_me(*latest_));
  });
  if (!stopped_.empty()) throw Error("shoal session: " + stopped_);
  if (!ok) {
    throw Timeout("no committed view after epoch " + std::to_string(after_epoch) + " includes " + id_.name +
                  " within " + std::to_string(timeout.count()) + " ms" +
                  (view_status().empty() ? "" : " (" + view_status() + ")"));
  }
  return rank_info(*latest_);
}

RankInfo SessionCore::ranks() const {
  std::lock_guard lock(mu_);
  return comm_ranks_;
}

RebuildState SessionCore::rebuild_state() const {
  RebuildState s;
  s.stopped = !stopped_.empty();
  if (latest_) {
    s.latest_epoch = latest_->epoch();
    s.latest_includes_me = includes_me(*latest_);
  }
  s.broken_epoch = broken_epoch_;
  s.broken_since = broken_since_;
  if (comm_) s.comm = RebuildState::Held{comm_->epoch(), comm_attempt_, comm_->aborted()};
  s.failed = failed_attempt_;
  return s;
}

std::shared_ptr<Communicator> SessionCore::communicator() {
  const auto deadline = std::chrono::steady_clock::now() + opt_.view_timeout;
  while (true) {
    std::optional<membership::View> view;
    std::shared_ptr<Communicator> previous;
    std::optional<membership::View> previous_view;
    std::optional<uint32_t> retry_after;  // the attempt every rank must be through with first
    {
      std::unique_lock lock(mu_);
      const RebuildDecision d = decide_rebuild(rebuild_state(), Clock::now(), deadline);
      failed_attempt_ = d.failed;
      switch (d.action) {
        case RebuildAction::use_current:
          return comm_;
        case RebuildAction::wait:
          changed_.wait_until(lock, d.wake);
          continue;
        case RebuildAction::stop:
          throw Error("shoal session: " + stopped_);
        case RebuildAction::give_up:
          throw Timeout("no usable committed view for " + id_.name + " within " +
                        std::to_string(opt_.view_timeout.count()) + " ms: the newest epoch is " +
                        std::to_string(latest_ ? latest_->epoch() : 0) + ", epoch " + std::to_string(broken_epoch_) +
                        " lost a member");
        case RebuildAction::retry_same_view:
          view = latest_;
          retry_after = d.retry_after;
          break;
        case RebuildAction::build_newest:
          view = latest_;
          previous = comm_;
          previous_view = comm_view_;
          break;
      }
    }
    uint32_t attempt = 0;
    if (retry_after) {
      try {
        agree_on_retry(*view, *retry_after, deadline);
      } catch (const ViewChanged& e) {
        // A newer view, or a member's failure: the loop decides again what to build.
        log::comm().info("the same-view rebuild of epoch {} is off: {}", view->epoch(), e.what());
        continue;
      }
      attempt = *retry_after + 1;
    }
    std::shared_ptr<Communicator> built;
    try {
      built = build(*view, previous, previous_view, attempt);
    } catch (const Timeout& e) {
      // A peer that never connected: under loss, or one that gave up on this attempt already. With every
      // member alive that is one more failed attempt; the barrier's own deadline bounds the retries.
      std::lock_guard lock(mu_);
      if (on_build_failed(rebuild_state(), view->epoch(), true, Clock::now(), deadline) == BuildFailure::rethrow) throw;
      log::comm().info("communicator for epoch {} (attempt {}) timed out while building: {}", view->epoch(), attempt,
                       e.what());
      failed_attempt_ = FailedAttempt{view->epoch(), attempt};
      continue;
    } catch (const ViewChanged& e) {
      std::lock_guard lock(mu_);
      if (on_build_failed(rebuild_state(), view->epoch(), false, Clock::now(), deadline) ==
          BuildFailure::record_attempt) {
        // A peer's build failed, or its communicator of this attempt already did: not a view change.
        log::comm().info("communicator for epoch {} (attempt {}) failed while building: {}", view->epoch(), attempt,
                         e.what());
        failed_attempt_ = FailedAttempt{view->epoch(), attempt};
      } else {
        log::comm().info("communicator for epoch {} abandoned while building: {}", view->epoch(), e.what());
      }
      continue;
    }
    std::lock_guard lock(mu_);
    comm_ = built;
    comm_view_ = view;
    comm_attempt_ = attempt;
    failed_attempt_.reset();
    comm_ranks_ = rank_info(*view);
    comm_ranks_.attempt = attempt;
    if (!latest_ || latest_->epoch() != view->epoch() || !usable(*view)) {
      comm_->abort("the view changed while the communicator was being built");
    }
    return comm_;
  }
}

void SessionCore::agree_on_retry(const membership::View& view, uint32_t failed, Clock::time_point deadline) {
  const ranks::RankTable table(view);
  const auto* me = table.find(id_.name, id_.slot);
  if (!me) throw ViewChanged(view.epoch(), id_.name + " holds no rank in epoch " + std::to_string(view.epoch()));
  // Said as what is known: a collective failed and no member is (yet) known to have failed. A peer that
  // died makes its connections fail before gossip's verdict; the verdict then ends this wait.
  log::comm().info(
      "the communicator of epoch {} (attempt {}) failed and no member of the view is known to have failed: "
      "rebuilding it for the same view once all {} ranks are through with it, unless a failure verdict or a "
      "newer view comes first",
      view.epoch(), failed, table.world_size());
  NetworkRendezvousStore store(store_options(view));
  const std::string prefix = id_.key_scope + "retry/" + std::to_string(failed) + "/";
  store.set(prefix + std::to_string(me->global_rank), {'1'});
  std::vector<std::string> keys;
  for (const auto& r : table.ranks()) keys.push_back(prefix + std::to_string(r.global_rank));
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  try {
    store.wait(keys, std::max(left, std::chrono::milliseconds(1)));
  } catch (const Timeout& e) {
    throw Timeout("the communicator of epoch " + std::to_string(view.epoch()) + " failed and not every rank came " +
                  "to rebuild it within " + std::to_string(opt_.view_timeout.count()) + " ms, although every " +
                  "member lives (a trainer stuck outside its collectives?): " + e.what());
  }
}

std::shared_ptr<Communicator> SessionCore::build(const membership::View& view, std::shared_ptr<Communicator> previous,
                                                 const std::optional<membership::View>& previous_view,
                                                 uint32_t attempt) {
  const ranks::RankTable table(view);
  const auto* me = table.find(id_.name, id_.slot);
  if (!me) throw Error(id_.name + " holds no rank in epoch " + std::to_string(view.epoch()));
  const uint64_t epoch = view.epoch();
  NetworkRendezvousStore epoch_store(store_options(view));
  comm::ScopedRendezvousStore store(epoch_store, scope(attempt));
  const auto started = std::chrono::steady_clock::now();
  comm::SessionCommSpec spec;
  spec.backend = opt_.backend == "nccl" ? comm::Backend::nccl : comm::Backend::gloo;
  spec.cuda_device = opt_.cuda_device >= 0 ? opt_.cuda_device : static_cast<int>(me->local_rank);
  std::optional<ranks::RankTable> before;
  if (previous && previous_view) {
    before.emplace(*previous_view);
    spec.previous = previous.get();
    spec.before = &*before;
    spec.after = &table;
  }
  spec.rank = static_cast<int>(me->global_rank);
  spec.world_size = static_cast<int>(table.world_size());
  spec.node_rank = me->node_rank;
  spec.local_rank = me->local_rank;
  spec.node_count = table.node_count();
  // NCCL's unique id travels along the bootstrap tree over the nodes' agents (comm_wrap/bootstrap_tree.hpp):
  // this rank reads it from its parent node's agent or its own, never every rank from rank 0's.
  std::map<uint32_t, std::pair<std::unique_ptr<NetworkRendezvousStore>, std::unique_ptr<comm::ScopedRendezvousStore>>>
      node_stores;
  if (spec.backend == comm::Backend::nccl) {
    spec.store_at = [&](uint32_t node) -> comm::RendezvousStore& {
      if (node == 0 || node >= table.node_count()) return store;  // node 0's agent serves the epoch
      auto& entry = node_stores[node];
      if (!entry.second) {
        auto options = store_options(view);
        options.store_addr = table.nodes()[node].member.addr;
        entry.first = std::make_unique<NetworkRendezvousStore>(std::move(options));
        entry.second = std::make_unique<comm::ScopedRendezvousStore>(*entry.first, scope(attempt));
      }
      return *entry.second;
    };
  }
  spec.epoch = epoch;
  spec.bind_ip = id_.bind_ip;
  spec.rendezvous_timeout = opt_.rendezvous_timeout;
  spec.collective_timeout = opt_.collective_timeout;
  // Evidence from the data plane: a collective that failed on a closed connection names its peer, and
  // that member's agent is probed at once (a hint: a member that answers stays).
  std::vector<std::pair<std::string, uint64_t>> members_by_rank;
  for (const auto& r : table.ranks()) {
    const auto* vm = view.find(r.member);
    members_by_rank.emplace_back(r.member, vm != nullptr ? vm->generation : 0);
  }
  spec.on_peer_lost = [this, epoch, members = std::move(members_by_rank)](int peer) {
    if (peer < 0 || static_cast<size_t>(peer) >= members.size()) return;
    const auto& [name, generation] = members[static_cast<size_t>(peer)];
    if (name == id_.name) return;  // another slot of this host
    log::comm().info("a collective of epoch {} lost its connection to rank {} ({}): asking the agent to probe it",
                     epoch, peer, name);
    peer_connection_broke(name, generation);
  };
  std::shared_ptr<Communicator> comm;
  try {
    comm = comm::make_session_communicator(spec, store);
  } catch (const Timeout& e) {
    // Name the ranks behind the missing keys: the operator looks for hosts, not keys.
    std::string who;
    for (const auto& r : table.ranks())
      who += (who.empty() ? "" : ", ") + std::to_string(r.global_rank) + "=" + r.member;
    throw Timeout(std::string(e.what()) + " (ranks of epoch " + std::to_string(epoch) + ": " + who + ")");
  }
  log::comm().info(
      "communicator of epoch {}{} ready: rank {} of {} ({} ms)", epoch,
      attempt == 0 ? std::string() : " (attempt " + std::to_string(attempt) + ")", spec.rank, spec.world_size,
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  return comm;
}

}  // namespace shoal::session
