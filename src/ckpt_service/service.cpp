// The agent's checkpoint service: outbound replication on one thread, inbound transfers on one thread
// each, replicas in this host's shared memory within the memory budget.
#include "ckpt_service/service.hpp"

#include <time.h>

#include <algorithm>

#include "base/log.hpp"
#include "ckpt_service/background_priority.hpp"
#include "ckpt_service/held_versions.hpp"
#include "ckpt_shm/chunk_lists.hpp"
#include "ckpt_shm/host_budget.hpp"
#include "ckpt_shm/persist_peers.hpp"
#include "ckpt_shm/persist_trust.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "control/replies/ckpt_ls.hpp"
#include "ranks/replica_placement.hpp"

namespace shoal::ckpt_service {
namespace {

using Clock = std::chrono::steady_clock;

// Replication happens at every save: the first of a kind and every 100th after it are logged at info, the
// others at debug (the counters in `shoal ckpt ls` and the metrics count them all).
spdlog::level::level_enum routine_level(uint64_t count) {
  return count == 1 || count % 100 == 0 ? spdlog::level::info : spdlog::level::debug;
}

// The CPU time the calling thread has used so far.
std::chrono::nanoseconds thread_cpu_time() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double gbps(uint64_t bytes, double s) { return s > 0 ? static_cast<double>(bytes) / s / 1e9 : 0.0; }

}  // namespace

CheckpointService::CheckpointService(CheckpointConfig config, std::string self_name,
                                     std::function<net::OutgoingHello()> hello)
    : cfg_(std::move(config)), self_(std::move(self_name)), hello_(std::move(hello)) {
  if (cfg_.store.empty()) cfg_.store = cfg_.job;
  slot_owner_ = pack(cfg_.owners.slots);
}

CheckpointService::~CheckpointService() { stop(); }

Status CheckpointService::start(net::StreamListener& listener) {
  if (auto ok = ckpt::check_job_name(cfg_.job); !ok) {
    return fail("checkpoint job name: " + ok.error().message +
                " (set --job to a name of letters, digits, '-' and '_')");
  }
  if (auto ok = ckpt::check_job_name(cfg_.store); !ok) return fail("checkpoint store name: " + ok.error().message);
  std::optional<ckpt::PersistDir> dir;
  if (!cfg_.persist_dir.empty()) {
    // The operator's directory itself is guarded too: whoever could write it could replace the member's.
    if (auto guarded = ckpt::guard_directory(cfg_.persist_dir, true); !guarded) {
      return fail("checkpoint directory: " + guarded.error().message);
    }
    auto opened =
        ckpt::PersistDir::open(ckpt::PersistConfig{.dir = cfg_.persist_dir + "/" + ckpt::member_dir_name(self_),
                                                   .job = cfg_.job,
                                                   .keep_per_rank = cfg_.persist_keep});
    if (!opened) return fail("checkpoint directory: " + opened.error().message);
    log::ckpt().info("ckpt: persisting local versions to {} ({} held there from earlier runs)", opened->job_dir(),
                     opened->list().size());
    dir.emplace(std::move(*opened));
  }
  if (!cfg_.store_by_lineage) {
    if (auto ok = open_store(cfg_.store); !ok) return ok;
    if (dir) load_persisted(*dir);
  }
  if (dir) {
    persister_ = std::make_unique<CheckpointPersister>(std::move(*dir), [this] { return store(); },
                                                       [this] { return owners(); });
    persister_->start();
  }
  listener.add_takeover_channel(wire::Hello::CKPT_STREAM, kMaxCkptRequestBytes,
                                [this](const net::StreamPeer& peer, std::span<const std::byte> bytes,
                                       net::BlockingConn conn) {
                                  wire::CkptRequest request;
                                  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
                                    log::ckpt().warn("ckpt: a malformed request from {}", peer.remote);
                                    (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED, "malformed request",
                                                             limits(nullptr));
                                    return;
                                  }
                                  serve(peer, std::move(request), std::move(conn));
                                });
  replicator_ = std::thread([this] { replicate_loop(); });
  log::ckpt().info(
      "ckpt: job {} (segments /dev/shm/shoal.{}.*{}), {} replica(s) per version, budget {}", cfg_.job, cfg_.store,
      cfg_.store_by_lineage ? ", the store named after the cluster's lineage at the first view" : "", cfg_.replicas,
      cfg_.budget_bytes ? std::to_string(cfg_.budget_bytes) + " bytes" : std::string("unlimited"));
  return Ok{};
}

Status CheckpointService::open_store(const std::string& name) {
  if (auto ok = ckpt::check_job_name(name); !ok) return fail("checkpoint store name: " + ok.error().message);
  auto opened = ckpt::ReplicaStore::open(
      ckpt::ReplicaStoreConfig{.job = cfg_.job, .store = name, .keep_per_rank = cfg_.keep_per_rank});
  if (!opened) return fail("checkpoint replicas: " + opened.error().message);
  if (opened->discarded_at_open() > 0) {
    log::ckpt().warn("ckpt: removed {} incomplete replica(s) left by an earlier run", opened->discarded_at_open());
  }
  if (const auto kept = opened->list(); !kept.empty()) {
    log::ckpt().info("ckpt: adopted {} replica(s) kept by an earlier run", kept.size());
  }
  {
    std::lock_guard lock(store_mu_);
    replicas_.emplace(std::move(*opened));
  }
  {
    std::lock_guard lock(name_mu_);
    store_ = name;
  }
  if (!cfg_.job_named && !cfg_.store_by_lineage) {
    inherited_.record(ckpt::scan_held(name, "/dev/shm", owners()));
    if (const auto aside = ckpt::scan_held(name, "/dev/shm", owners()).size() - held().size(); aside > 0) {
      log::ckpt().info(
          "ckpt: {} version(s) of job {} were here before this agent started: set aside until the first "
          "view tells whether this cluster ran before (--job names a job whose checkpoints outlive its "
          "cluster)",
          aside, cfg_.job);
    }
  }
  return Ok{};
}

std::string CheckpointService::store() const {
  std::lock_guard lock(name_mu_);
  return store_;
}

void CheckpointService::stop() {
  {
    // Under the lock, so the replicator cannot miss the wake-up between its check and its wait.
    std::lock_guard lock(mu_);
    if (stopping_.exchange(true)) return;
    cancel_stream_ = true;
  }
  wake_.notify_all();
  if (replicator_.joinable()) replicator_.join();
  std::list<Inbound> inbound;
  {
    std::lock_guard lock(mu_);
    inbound.swap(inbound_);
  }
  for (auto& in : inbound) in.thread.join();
  if (persister_) persister_->stop();
}

void CheckpointService::flush_persisted() {
  if (persister_) persister_->flush();
}

bool CheckpointService::persisting() const { return persister_ && persister_->busy(); }

TransferLimits CheckpointService::limits(const std::atomic<bool>* cancel) const {
  return TransferLimits{.stall_timeout = cfg_.stall_timeout,
                        .floor_bytes_per_s = cfg_.transfer_floor_bytes_per_s,
                        .whole_allowance = cfg_.transfer_allowance,
                        .cancel = cancel ? cancel : &stopping_};
}

void CheckpointService::settle_inherited(const membership::View& view) {
  const auto foreign = inherited_.settle(view);
  if (foreign.empty() || !replicas_) return;
  size_t removed = 0;
  for (const auto& h : foreign) {
    const auto& id = h.version->id;
    if (h.replica) {
      std::lock_guard lock(store_mu_);
      if (replicas_->drop(id.rank, id.step)) ++removed;
      continue;
    }
    // A slot: only while it still holds what was found (nothing of this run can be in it yet: ranks
    // come from this very view), and never another user's object (read_segment_prefix checks).
    const auto now = ckpt::read_segment_prefix(h.segment, "/dev/shm", owners().slots);
    if (now && now->id.job == id.job && now->id.step == id.step && now->id.sequence == id.sequence &&
        ckpt::ShmSegment::unlink(h.segment).ok()) {
      ++removed;
    }
  }
  log::ckpt().warn(
      "ckpt: this cluster formed anew in epoch {} (no member is older), so the {} version(s) found here "
      "at start are another run's: removed {} (name a job with --job to keep its checkpoints across "
      "whole-cluster restarts)",
      view.epoch(), foreign.size(), removed);
}

void CheckpointService::on_view(const membership::View& view) {
  if (cfg_.store_by_lineage && store().empty()) {
    // The first view: from now on this cluster's segments are its lineage's, and nothing an earlier run
    // or another cluster of this id left under other names is seen at all.
    const auto name = ckpt::store_for_lineage(cfg_.store, view.lineage());
    if (auto ok = open_store(name); !ok) {
      log::ckpt().error("ckpt: cannot keep checkpoints in epoch {}: {}", view.epoch(), ok.error().message);
      return;
    }
    log::ckpt().info("ckpt: cluster lineage {:016x}: this job's segments are /dev/shm/shoal.{}.*{}", view.lineage(),
                     name, view.lineage() == 0 ? " (the view's proposer names no lineage: an older agent)" : "");
    if (persister_) load_persisted(persister_->dir());
  }
  settle_inherited(view);
  if (persister_ && !resume_checked_ && !store().empty()) {
    resume_checked_ = true;
    resume_persisted(view);
  }
  // The newest sealed local version of each rank, also those committed before this agent started.
  const auto local = newest_local_steps(held(), cfg_.job);
  auto placed = std::make_shared<const PlacedView>(view, cfg_.replicas, self_);  // outside the lock
  std::lock_guard lock(mu_);
  if (view_ && view_->epoch() != view.epoch()) previous_view_ = view_;
  view_ = std::move(placed);
  for (const auto& [rank, step] : local) {
    newest_[rank] = std::max(newest_[rank], step);
    pending_[rank] = newest_[rank];
  }
  wake_.notify_all();
}

void CheckpointService::committed(uint32_t rank, uint64_t step) {
  std::lock_guard lock(mu_);
  ++counters_.committed;
  newest_[rank] = std::max(newest_[rank], step);
  pending_[rank] = newest_[rank];
  if (streaming_ && streaming_rank_ == rank && streaming_step_ < step) cancel_stream_ = true;
  wake_.notify_all();
  if (persister_) persister_->committed(rank, step);
}

void CheckpointService::replicate_loop() {
  lower_this_thread_priority();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait(lock, [&] { return stopping_ || (!pending_.empty() && view_); });
    if (stopping_) break;
    const auto [rank, step] = *pending_.begin();
    pending_.erase(pending_.begin());
    streaming_ = true;
    streaming_rank_ = rank;
    streaming_step_ = step;
    cancel_stream_ = false;
    lock.unlock();
    const auto cpu_before = thread_cpu_time();
    replicate(rank, step);
    const auto took = thread_cpu_time() - cpu_before;
    lock.lock();
    streaming_ = false;
    // The duty cycle: rest in proportion to the CPU the push took (versions saved meanwhile wait in
    // pending_, the newest of each rank only). CPU time, not wall time: a push that stalls on a lossy
    // network costs the trainers little, and must not hold the next one back for long. A stop or a view
    // change ends the rest.
    const uint32_t duty = std::clamp<uint32_t>(cfg_.replicate_duty_percent, 1, 100);
    if (duty < 100) {
      const auto rest = took * (100 - duty) / duty;
      const auto epoch = view_ ? view_->epoch() : 0;
      wake_.wait_for(lock, rest, [&] { return stopping_ || (view_ ? view_->epoch() : 0) != epoch; });
    }
  }
}

void CheckpointService::replicate(uint32_t rank, uint64_t step) {
  PlacedViewPtr view;
  {
    std::lock_guard lock(mu_);
    view = view_;
  }
  const auto* mine = view->replicas_of(self_);
  if (mine == nullptr || mine->holders.empty()) {
    log::ckpt().debug("ckpt: rank {} step {} has no peer to go to in epoch {}", rank, step, view->epoch());
    return;
  }
  std::optional<MappedVersion> version;
  for (const auto& h : holding(held(), cfg_.job, rank, step)) {
    if (h.replica) continue;
    if ((version = map_version(h, cfg_.job, rank, step, owners()))) break;
  }
  if (!version) {
    log::ckpt().debug("ckpt: rank {} step {} is no longer held here; nothing to replicate", rank, step);
    return;
  }
  const auto bytes = std::span<const std::byte>(version->segment.bytes()).first(version->info.total_bytes);
  size_t held_by = 0;
  for (const auto& holder : mine->holders) {
    const auto* member = view->view().find(holder);
    if (member == nullptr) continue;
    const auto started = Clock::now();
    auto outcome = push_version(TransferPeer{member->addr, hello_()}, bytes, version->info, limits(&cancel_stream_));
    std::lock_guard lock(mu_);
    if (outcome) ++held_by;
    if (outcome && *outcome == PushOutcome::stored) {
      ++counters_.pushed;
      counters_.pushed_bytes += version->info.total_bytes;
      const double s = seconds_since(started);
      log::ckpt().log(routine_level(counters_.pushed),
                      "ckpt: rank {} step {} replicated to {} ({} bytes in {:.3f} s, {:.2f} GB/s)", rank, step, holder,
                      version->info.total_bytes, s, gbps(version->info.total_bytes, s));
    } else if (outcome) {
      ++counters_.push_skipped;
    } else if (cancel_stream_ && !stopping_) {
      ++counters_.push_superseded;
      log::ckpt().log(routine_level(counters_.push_superseded),
                      "ckpt: rank {} step {} to {} superseded by a newer save", rank, step, holder);
      return;
    } else {
      ++counters_.push_failed;
      log::ckpt().warn("ckpt: rank {} step {} could not be replicated to {} at {}: {}", rank, step, holder,
                       member->addr, outcome.error().message);
    }
  }
  if (held_by == mine->holders.size()) {
    std::lock_guard lock(mu_);
    auto& done = replicated_[rank];
    done = std::max(done, step);
  }
}

std::vector<ReplicationLag> CheckpointService::replication_lag() const {
  std::lock_guard lock(mu_);
  std::vector<ReplicationLag> out;
  for (const auto& [rank, step] : newest_) {
    const auto r = replicated_.find(rank);
    out.push_back({rank, step, r == replicated_.end() ? std::nullopt : std::optional<uint64_t>(r->second)});
  }
  return out;
}

void CheckpointService::reap_finished() {
  for (auto it = inbound_.begin(); it != inbound_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = inbound_.erase(it);
    } else {
      ++it;
    }
  }
}

void CheckpointService::serve(const net::StreamPeer& peer, wire::CkptRequest request, net::BlockingConn conn) {
  std::lock_guard lock(mu_);
  reap_finished();
  if (stopping_ || inbound_.size() >= cfg_.max_transfers) {
    (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED,
                             stopping_ ? "the agent is stopping" : "too many transfers in progress; try again",
                             limits(nullptr));
    return;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  inbound_.push_back(
      Inbound{std::thread([this, peer, request = std::move(request), conn = std::move(conn), done]() mutable {
                conn.set_cancel(&stopping_);
                if (!admit(peer, request, conn)) {
                  // refused and counted
                } else if (request.kind() == wire::CkptRequest::PUSH) {
                  lower_this_thread_priority();  // a replica arriving: nobody waits for it
                  serve_push_request(peer, request, conn);
                } else if (request.kind() == wire::CkptRequest::FETCH ||
                           request.kind() == wire::CkptRequest::FETCH_RANGES) {
                  serve_fetch_request(request, conn);
                } else {
                  (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED, "unknown request kind", limits(nullptr));
                }
                *done = true;
              }),
              done});
}

void CheckpointService::serve_push_request(const net::StreamPeer& peer, const wire::CkptRequest& request,
                                           net::BlockingConn& conn) {
  const uint32_t rank = request.rank();
  const uint64_t step = request.step();
  std::optional<ckpt::Incoming> incoming;
  const auto started = Clock::now();
  const auto accept = [&]() -> Result<bool> {
    if (request.job() != cfg_.job) return fail("this host serves job " + cfg_.job + ", not " + request.job());
    std::lock_guard lock(store_mu_);
    if (!replicas_) return fail("this host keeps no replicas yet");
    return !replicas_->find(rank, step).has_value();
  };
  const auto destination = [&](const ckpt::VersionInfo& info) -> Result<std::span<std::byte>> {
    std::lock_guard lock(store_mu_);
    // The version and, after it, its chunk lists (chunk_lists.hpp), which the receiver writes as it verifies.
    const uint64_t bytes = ckpt::segment_bytes_for(info);
    if (auto room = make_room(rank, bytes); !room) return fail(room.error().message);
    auto in = replicas_->begin(rank, step, bytes);
    if (!in) return fail(in.error().message);
    incoming.emplace(std::move(*in));
    return incoming->bytes().first(bytes);
  };
  const auto kept = [&](const ckpt::VersionInfo&) -> Status {
    std::lock_guard lock(store_mu_);
    return replicas_->complete(std::move(*incoming));
  };
  auto outcome = serve_push(conn, request, accept, destination, kept, limits(nullptr));
  {
    std::lock_guard lock(store_mu_);
    incoming.reset();  // a receive cut short: its segment goes
  }
  std::lock_guard lock(mu_);
  if (outcome) {
    ++counters_.received;
    origins_[{rank, step}] = peer.hello.name;
    // Only the replicas a rank can still have here are worth remembering.
    auto first = origins_.lower_bound({rank, 0});
    while (std::count_if(first, origins_.end(), [&](const auto& o) { return o.first.first == rank; }) >
           static_cast<std::ptrdiff_t>(cfg_.keep_per_rank) + 1) {
      first = origins_.erase(first);
    }
    const double s = seconds_since(started);
    log::ckpt().log(routine_level(counters_.received),
                    "ckpt: kept rank {} step {} from {} ({} bytes in {:.3f} s, {:.2f} GB/s)", rank, step,
                    peer.hello.name, outcome->total_bytes, s, gbps(outcome->total_bytes, s));
  } else if (outcome.error().message != "already held") {
    ++counters_.receive_refused;
    log::ckpt().warn("ckpt: refused rank {} step {} from {}: {}", rank, step, peer.hello.name, outcome.error().message);
  }
}

bool CheckpointService::admit(const net::StreamPeer& peer, const wire::CkptRequest& request,
                              net::BlockingConn& conn) {
  const bool push = request.kind() == wire::CkptRequest::PUSH;
  if (!push && request.kind() != wire::CkptRequest::FETCH && request.kind() != wire::CkptRequest::FETCH_RANGES) {
    return true;  // answered as unknown
  }
  std::optional<Refusal> refusal;
  std::string detail;
  {
    std::lock_guard lock(mu_);
    refusal = push ? judge_push(view_.get(), peer.hello.name, request.rank(), previous_view_.get())
                   : judge_fetch(view_.get(), peer.hello.name);
    if (!refusal) return true;
    auto& count = push ? counters_.push_unauthorized : counters_.fetch_unauthorized;
    ++count[static_cast<size_t>(*refusal)];
    detail = *refusal == Refusal::no_view      ? "this host has no committed view yet"
             : *refusal == Refusal::not_member ? std::string(member_of(peer.hello.name)) + " is not a member of epoch " +
                                                     std::to_string(view_->epoch())
             : *refusal == Refusal::not_placed ? "placement in epoch " + std::to_string(view_->epoch()) +
                                                     " does not send " + peer.hello.name + "'s replicas here"
                                               : "rank " + std::to_string(request.rank()) + " is not " +
                                                     peer.hello.name + "'s in epoch " + std::to_string(view_->epoch()) +
                                                     " or the one before";
    const uint32_t bit = 1u << (static_cast<uint32_t>(*refusal) + (push ? 0 : kRefusals));
    const bool first = (warned_refusals_ & bit) == 0;
    warned_refusals_ |= bit;
    log::ckpt().log(first ? spdlog::level::warn : spdlog::level::debug,
                    "ckpt: refused a {} of rank {} step {} from {} ({}): {}{}", push ? "push" : "fetch", request.rank(),
                    request.step(), peer.hello.name, peer.remote, detail,
                    first ? " (further refusals of this cause are counted, logged at debug)" : "");
  }
  (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED, detail, limits(nullptr));
  return false;
}

Status CheckpointService::make_room(uint32_t rank, uint64_t incoming) {
  if (cfg_.budget_bytes == 0) return Ok{};

  uint64_t local = 0;
  for (const auto& h : held()) {
    if (!h.replica) local += h.segment_bytes;
  }
  // Local versions are the trainers' (two slots per rank, bounded by the model); only replicas are
  // evicted here, and never a rank's newest.
  if (local >= cfg_.budget_bytes) {
    return fail("the checkpoint budget of " + std::to_string(cfg_.budget_bytes) +
                " bytes is taken by local versions (" + std::to_string(local) +
                " bytes); raise it with --ckpt-budget, or save less per rank");
  }
  const auto held_replicas = replicas_->held_versions();
  const auto plan_for = [&](uint64_t spares) {
    return ckpt::plan_eviction(held_replicas,
                               ckpt::IncomingSave{cfg_.job, 0, incoming + replicas_->receiving_bytes() + spares},
                               cfg_.budget_bytes - local);
  };
  // Spares are memory without versions: they go before any replica would. The rank's own spare is the
  // memory this receive reuses (counted in `incoming`), so it stays.
  const uint64_t other_spares = replicas_->spare_bytes() - replicas_->spare_bytes(rank);
  auto plan = plan_for(other_spares);
  if (other_spares > 0 && (!plan || !plan->drop.empty())) {
    log::ckpt().debug("ckpt: freed {} bytes of spare replica memory for the budget", replicas_->drop_spares(rank));
    plan = plan_for(0);
  }
  if (!plan) return fail("checkpoint budget: " + plan.error().message);
  for (const size_t i : plan->drop) {
    const auto& v = held_replicas[i];
    if (replicas_->drop(v.rank, v.step)) {
      std::lock_guard lock(mu_);
      ++counters_.evicted;
      log::ckpt().info("ckpt: dropped the replica of rank {} step {} ({} bytes) for the memory budget", v.rank, v.step,
                       v.bytes);
    }
  }
  return Ok{};
}

std::vector<ckpt::HeldSegment> CheckpointService::held() const {
  const auto name = store();
  if (name.empty()) return {};  // no store before the first view (store_by_lineage)
  return inherited_.without(ckpt::scan_held(name, "/dev/shm", owners()));
}

CheckpointCounters CheckpointService::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::string CheckpointService::ls_json(bool verify) const {
  control::CkptLsReply reply;
  reply.job = cfg_.job;
  reply.store = store();
  reply.replicas = cfg_.replicas;
  reply.budget_bytes = cfg_.budget_bytes;
  for (const auto& h : held()) {
    control::HeldRow& row = reply.held.emplace_back();
    row.segment = h.segment;
    row.kind = h.replica ? "replica" : "local";
    row.segment_bytes = h.segment_bytes;
    if (!h.version) {
      row.problem = h.problem;
      continue;
    }
    if (h.replica) {
      std::lock_guard lock(mu_);
      const auto o = origins_.find({h.version->id.rank, h.version->id.step});
      row.from = o != origins_.end() ? o->second : std::string("(an earlier run of this agent)");
    } else {
      row.from = "(a trainer on this host)";
    }
    row.version = control::HeldVersion{h.version->id.job,   h.version->id.rank,     h.version->id.step,
                                       h.version->id.world, h.version->total_bytes, h.version->buffers.size()};
    if (verify) {
      auto seg = ckpt::ShmSegment::open_existing(h.segment, h.replica ? owners().replicas : owners().slots);
      auto checked = seg ? ckpt::decode_version(seg->bytes(), ckpt::DataCheck::verify)
                         : Result<ckpt::VersionInfo, ckpt::LayoutError>(
                               Unexpected<ckpt::LayoutError>{ckpt::LayoutError{ckpt::LayoutCause::truncated, "gone"}});
      row.verified = checked.ok();
      if (!checked) row.problem = std::string(ckpt::name(checked.error().cause)) + ": " + checked.error().detail;
    }
  }
  const auto c = counters();
  reply.counters = {c.pushed,   c.push_skipped,    c.push_failed,    c.push_superseded,
                    c.received, c.receive_refused, c.fetches_served, c.evicted};
  using ckpt::SegmentRefusal;
  reply.refused_segments = {ckpt::refused_segments(SegmentRefusal::symlink),
                            ckpt::refused_segments(SegmentRefusal::not_regular),
                            ckpt::refused_segments(SegmentRefusal::foreign_owner),
                            ckpt::refused_segments(SegmentRefusal::loose_mode)};
  if (persister_) reply.persist = persist_section();
  return control::write_reply(reply);
}

}  // namespace shoal::ckpt_service
