// The session's core: failure notices, view changes, and communicators built per committed view.
#include "agent/session_core.hpp"

#include "agent/rendezvous_client.hpp"
#include "base/log.hpp"
#include "comm_wrap/session_communicator.hpp"
#include "ranks/rank_table.hpp"

namespace shoal::agent {
namespace {

spdlog::logger& logger() { return log::get(log::Component::comm); }

}  // namespace

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
    latest_ = view;
    if (comm_ && comm_->epoch() < view.epoch() && !comm_->aborted()) {
      logger().info("epoch {} committed: aborting the communicator of epoch {}", view.epoch(), comm_->epoch());
      comm_->abort("superseded by the view of epoch " + std::to_string(view.epoch()));
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
  broken_epoch_ = std::max(broken_epoch_, latest_->epoch());
  if (comm_ && !comm_->aborted()) {
    logger().info("member {} is {}: aborting the communicator of epoch {}", name, state, comm_->epoch());
    comm_->abort("member " + name + " is " + state);
  }
  changed_.notify_all();
}

void SessionCore::epoch_broken(uint64_t epoch, const std::string& why) {
  std::lock_guard lock(mu_);
  broken_epoch_ = std::max(broken_epoch_, epoch);
  if (comm_ && !comm_->aborted() && comm_->epoch() <= epoch) {
    logger().info("{}: aborting the communicator of epoch {}", why, comm_->epoch());
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
}

std::unique_ptr<CheckpointSave> SessionCore::begin_save(uint64_t step, const std::vector<CheckpointBuffer>& buffers) {
  RankInfo ranks;
  {
    std::lock_guard lock(mu_);
    if (!comm_) throw Error("begin_save needs a communicator first (call communicator())");
    ranks = comm_ranks_;
  }
  return checkpoints_->begin_save(step, static_cast<uint32_t>(ranks.rank), static_cast<uint32_t>(ranks.world_size),
                                  buffers);
}

std::optional<RestoredCheckpoint> SessionCore::restore(Communicator& comm, std::optional<uint32_t> saved_rank) {
  std::optional<membership::View> view;
  {
    std::lock_guard lock(mu_);
    if (comm_view_ && comm_view_->epoch() == comm.epoch()) view = comm_view_;
  }
  if (!view) throw ViewChanged(comm.epoch(), "restore: the communicator of epoch " + std::to_string(comm.epoch()) +
                                                 " is not the session's current one");
  NetworkRendezvousStore store(store_options(*view));
  return checkpoints_->restore(comm, store, saved_rank);
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
    return !stopped_.empty() || (latest_ && latest_->epoch() > epoch) || broken_epoch_ >= epoch;
  };
  return store_opt;
}

bool SessionCore::includes_me(const membership::View& view) const {
  const auto* me = view.find(id_.name);
  return me && me->generation == id_.generation && me->slots > id_.slot;
}

bool SessionCore::usable(const membership::View& view) const {
  return view.epoch() > broken_epoch_ && includes_me(view);
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
                  " within " + std::to_string(timeout.count()) + " ms" + (view_status().empty() ? "" : " (" + view_status() + ")"));
  }
  return rank_info(*latest_);
}

RankInfo SessionCore::ranks() const {
  std::lock_guard lock(mu_);
  return comm_ranks_;
}

std::shared_ptr<Communicator> SessionCore::communicator() {
  const auto deadline = std::chrono::steady_clock::now() + opt_.view_timeout;
  while (true) {
    std::optional<membership::View> view;
    std::shared_ptr<Communicator> previous;
    std::optional<membership::View> previous_view;
    {
      std::unique_lock lock(mu_);
      if (comm_ && comm_->aborted()) broken_epoch_ = std::max(broken_epoch_, comm_->epoch());
      if (comm_ && !comm_->aborted() && latest_ && comm_->epoch() == latest_->epoch()) return comm_;
      const bool ok =
          changed_.wait_until(lock, deadline, [&] { return !stopped_.empty() || (latest_ && usable(*latest_)); });
      if (!stopped_.empty()) throw Error("shoal session: " + stopped_);
      if (!ok) {
        throw Timeout("no usable committed view for " + id_.name + " within " +
                      std::to_string(opt_.view_timeout.count()) + " ms: the newest epoch is " +
                      std::to_string(latest_ ? latest_->epoch() : 0) + ", epoch " + std::to_string(broken_epoch_) +
                      " lost a member");
      }
      view = latest_;
      previous = comm_;
      previous_view = comm_view_;
    }
    std::shared_ptr<Communicator> built;
    try {
      built = build(*view, previous, previous_view);
    } catch (const ViewChanged& e) {
      logger().info("communicator for epoch {} abandoned while building: {}", view->epoch(), e.what());
      std::lock_guard lock(mu_);
      broken_epoch_ = std::max(broken_epoch_, std::min(view->epoch(), latest_ ? latest_->epoch() : 0));
      continue;
    }
    std::lock_guard lock(mu_);
    comm_ = built;
    comm_view_ = view;
    comm_ranks_ = rank_info(*view);
    if (!latest_ || latest_->epoch() != view->epoch() || broken_epoch_ >= view->epoch()) {
      comm_->abort("the view changed while the communicator was being built");
    }
    return comm_;
  }
}

std::shared_ptr<Communicator> SessionCore::build(const membership::View& view,
                                                     std::shared_ptr<Communicator> previous,
                                                     const std::optional<membership::View>& previous_view) {
  const ranks::RankTable table(view);
  const auto* me = table.find(id_.name, id_.slot);
  if (!me) throw Error(id_.name + " holds no rank in epoch " + std::to_string(view.epoch()));
  const uint64_t epoch = view.epoch();
  NetworkRendezvousStore store(store_options(view));
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
  spec.epoch = epoch;
  spec.bind_ip = id_.bind_ip;
  spec.rendezvous_timeout = opt_.rendezvous_timeout;
  spec.collective_timeout = opt_.collective_timeout;
  std::shared_ptr<Communicator> comm;
  try {
    comm = comm::make_session_communicator(spec, store);
  } catch (const Timeout& e) {
    // Name the ranks behind the missing keys: the operator looks for hosts, not keys.
    std::string who;
    for (const auto& r : table.ranks()) who += (who.empty() ? "" : ", ") + std::to_string(r.global_rank) + "=" + r.member;
    throw Timeout(std::string(e.what()) + " (ranks of epoch " + std::to_string(epoch) + ": " + who + ")");
  }
  logger().info("communicator of epoch {} ready: rank {} of {} ({} ms)", epoch, spec.rank, spec.world_size,
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
                    .count());
  return comm;
}

}  // namespace shoal::agent
