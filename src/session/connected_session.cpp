// Following a local agent over its control socket.
#include "session/connected_session.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "base/log.hpp"
#include "base/warn_limiter.hpp"
#include "control/client.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "control/replies/session.hpp"
#include "health/health_report.hpp"
#include "health/trainer_stats.hpp"
#include "net/host_port.hpp"
#include "net/stream_hello.hpp"
#include "wire/packet.hpp"

namespace shoal::session {
namespace {

// One long poll; the loop sees stop_ at least this often.
constexpr uint32_t kPollMs = 500;
// The agent is gone when its control socket has refused this many polls in a row.
constexpr int kMaxFailedPolls = 20;

// The view of a `view` reply, checked against its hash.
Result<membership::View> view_from_reply(const control::ViewReply& reply) {
  std::vector<membership::ViewMember> list;
  for (const auto& m : reply.members) {
    membership::ViewMember vm;
    vm.name = m.name;
    vm.host = m.host;
    vm.addr = m.addr;
    vm.slots = m.slots;
    vm.join_epoch = m.join_epoch;
    vm.generation = m.generation;
    list.push_back(std::move(vm));
  }
  uint64_t lineage = 0;  // an older agent names none
  if (!reply.lineage.empty()) {
    const auto* end = reply.lineage.data() + reply.lineage.size();
    if (auto r = std::from_chars(reply.lineage.data(), end, lineage, 16); r.ec != std::errc{} || r.ptr != end) {
      return fail("the agent sent an invalid lineage '" + reply.lineage + "'");
    }
  }
  auto view = membership::View::make(reply.epoch, std::move(list), lineage, reply.evicted);
  if (!view) return fail("the agent sent an invalid view: " + view.error().message);
  if (fmt::format("{:016x}", view->hash()) != reply.hash) {
    return fail("the agent's view does not match its hash " + reply.hash);
  }
  return view;
}

}  // namespace

ConnectedSession::ConnectedSession(SessionOptions options) : SessionCore(std::move(options)) {}

ConnectedSession::~ConnectedSession() { leave(); }

Status ConnectedSession::begin() {
  auto reply = control::control_request(opt_.control_path, "session-info");
  if (!reply) return fail(reply.error().message);
  auto doc = control::parse_reply<control::SessionInfoReply>(*reply);
  if (!doc) {
    return fail("the agent at " + opt_.control_path + " does not serve trainers (" + doc.error().message +
                "): " + *reply);
  }
  SessionIdentity id;
  id.name = doc->name;
  id.generation = doc->generation;
  id.slot = opt_.slot;
  agent_addr_ = doc->addr;
  const auto slots = doc->slots;
  if (id.slot >= slots) {
    return fail("slot " + std::to_string(id.slot) + " does not exist: the agent " + id.name + " has " +
                std::to_string(slots) + " slot(s)");
  }
  const auto ip = net::parse_ip_port(agent_addr_);
  if (!ip) return fail("the agent's address '" + agent_addr_ + "' is not numeric");
  id.bind_ip = ip->ip.to_string();
  // A keyed cluster: this trainer seals its own hellos with the agent's key file (the same host, and
  // normally the same user; a trainer that may not read it gets this error rather than refusals).
  auto keys = net::load_cluster_keys(doc->key_file);
  if (!keys) return fail("the agent's cluster key: " + keys.error().message);
  if (*keys) id.keys = std::make_shared<const wire::KeyRing>(**keys);
  auto seal = std::make_shared<net::ClusterSeal>(std::move(*keys));
  id.rendezvous_hello = net::OutgoingHello(
      net::encode_hello(
          wire::make_envelope(doc->cluster, id.name + "/" + std::to_string(id.slot), id.generation, agent_addr_),
          wire::Hello::RENDEZVOUS),
      seal);
  id.checkpoints.job = doc->job;
  id.checkpoints.store = doc->store;
  id.checkpoints.store_by_lineage = doc->store_by_lineage;
  if (doc->ckpt_replicas >= 0) id.checkpoints.replicas = static_cast<uint32_t>(doc->ckpt_replicas);
  id.checkpoints.holder = id.name;
  id.checkpoints.agent_addr = agent_addr_;
  id.checkpoints.ckpt_hello = net::OutgoingHello(
      net::encode_hello(
          wire::make_envelope(doc->cluster, id.name + "/" + std::to_string(id.slot), id.generation, agent_addr_),
          wire::Hello::CKPT_STREAM),
      seal);
  id.checkpoints.rendezvous_timeout = opt_.rendezvous_timeout;
  id.checkpoints.committed = [path = opt_.control_path](uint32_t rank, uint64_t step) {
    auto r = control::control_request(path, "ckpt-committed " + std::to_string(rank) + " " + std::to_string(step));
    if (!r)
      log::get(log::Component::ckpt).warn("ckpt: could not tell the agent of step {}: {}", step, r.error().message);
  };
  id.checkpoints.safety = [path = opt_.control_path](uint32_t rank) -> Result<ckpt_service::RankSafety> {
    auto r = control::control_request(path, "ckpt-safe " + std::to_string(rank));
    if (!r) return fail(r.error().message);
    auto doc = control::parse_reply<control::CkptSafeReply>(*r);
    if (!doc) return fail("the agent at " + path + " cannot say (" + doc.error().message + ")");
    return ckpt_service::RankSafety{doc->committed, doc->replicated, doc->holders, doc->persisting, doc->persisted};
  };
  // A worker that `shoal agent` started again for the same view: its keys are not its predecessors'.
  if (const char* round = std::getenv("SHOAL_WORKER_ROUND"); round != nullptr && *round != '\0' &&
                                                            std::string_view(round) != "0") {
    if (std::string(round).find_first_not_of("0123456789") != std::string::npos || std::strlen(round) > 9) {
      return fail(std::string("SHOAL_WORKER_ROUND is not a count: '") + round + "'");
    }
    id.key_scope = "round/" + std::string(round) + "/";
  }
  if (id.checkpoints.job.empty())
    return fail("the agent at " + opt_.control_path + " serves no checkpoints (an older version?)");
  set_identity(std::move(id));
  poller_ = std::thread([this] { follow(); });
  reporter_ = std::thread([this] { send_reports(); });
  return Ok{};
}

void ConnectedSession::leave() {
  stop_ = true;
  {
    std::lock_guard lock(report_mu_);
    report_stop_ = true;
  }
  report_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  if (reporter_.joinable()) reporter_.join();
}

void ConnectedSession::report_health(const JobHealth& health) {
  {
    std::lock_guard lock(report_mu_);
    report_ = health;
  }
  report_cv_.notify_all();
}

void ConnectedSession::send_reports() {
  log::WarnLimiter warn_limiter(std::chrono::seconds(60));
  std::unique_lock lock(report_mu_);
  while (true) {
    report_cv_.wait(lock, [this] { return report_stop_ || report_.has_value() || stats_.has_value(); });
    // Both kinds in one round, so that frequent run figures never hold a verdict back.
    const auto stats = std::exchange(stats_, std::nullopt);
    const auto health = std::exchange(report_, std::nullopt);
    const bool stopping = report_stop_;
    lock.unlock();
    if (stats) send_trainer_stats(*stats);  // also once the session leaves: a run's last figures
    if (health && !stopping) send_health(*health, warn_limiter);
    if (stopping) return;
    lock.lock();
  }
}

void ConnectedSession::send_health(const JobHealth& health, log::WarnLimiter& warn_limiter) {
  const auto lines = health::encode_health_report(health, opt_.slot);
  std::string failed;
  if (lines.empty()) failed = "the job has more hosts than a report may carry";
  for (const auto& line : lines) {
    auto r = control::control_request(opt_.control_path, line, std::chrono::milliseconds(2000));
    auto ack = r ? control::parse_reply<control::CommittedReply>(*r)
                 : Result<control::CommittedReply>(fail(r.error().message));
    if (!ack) {
      failed = ack.error().message;
      break;
    }
  }
  if (!failed.empty()) {
    if (const auto held = warn_limiter.admit("health-report", std::chrono::steady_clock::now())) {
      log::get(log::Component::comm)
          .warn(
              "node health: could not tell the agent the verdict of step {} (epoch {}): {} ({} such warning(s) "
              "held back)",
              health.step, health.epoch, failed, *held);
    }
  }
}

void ConnectedSession::report_trainer_stats(const health::TrainerStats& stats) {
  {
    std::lock_guard lock(report_mu_);
    stats_ = stats;
  }
  report_cv_.notify_all();
}

void ConnectedSession::send_trainer_stats(const health::TrainerStats& stats) {
  // Short: a stuck agent delays only the next report, never a step.
  auto r = control::control_request(opt_.control_path, health::encode_trainer_stats(opt_.slot, stats),
                                    std::chrono::milliseconds(1000));
  auto ack =
      r ? control::parse_reply<control::CommittedReply>(*r) : Result<control::CommittedReply>(fail(r.error().message));
  if (ack) return;
  // An agent older than the request refuses every report: one warning says so, the rest go to debug.
  auto& logger = log::get(log::Component::agent);
  if (!std::exchange(stats_failed_, true)) {
    logger.warn("could not tell the agent what this run lost (later failures are logged at debug): {}",
                ack.error().message);
  } else {
    logger.debug("could not tell the agent what this run lost: {}", ack.error().message);
  }
}

void ConnectedSession::follow() {
  uint64_t seq = 0;
  uint64_t view_epoch = 0;
  uint64_t broken = 0;
  uint64_t verdicts = 0;  // the agent's count of member failures
  int failures = 0;
  while (!stop_) {
    auto reply = control::control_request(opt_.control_path,
                                          "session-wait " + std::to_string(seq) + " " + std::to_string(kPollMs),
                                          std::chrono::milliseconds(kPollMs + 3000));
    auto doc = reply ? control::parse_reply<control::SessionWaitReply>(*reply)
                     : Result<control::SessionWaitReply>(fail(reply.error().message));
    if (!doc) {
      if (++failures >= kMaxFailedPolls) {
        source_stopped("the agent at " + opt_.control_path + " stopped answering: " + doc.error().message);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    failures = 0;
    seq = doc->seq;
    if (doc->view && doc->view->epoch > view_epoch) {
      auto view = view_from_reply(*doc->view);
      if (!view) {
        log::get(log::Component::comm).warn("connected session: {}", view.error().message);
      } else {
        view_epoch = view->epoch();
        view_committed(*view);
      }
    }
    const uint64_t b = doc->broken_epoch;
    const uint64_t f = doc->failures;  // 0 from agents before it existed
    if (b > broken || f > verdicts) {
      broken = std::max(broken, b);
      verdicts = std::max(verdicts, f);
      epoch_broken(broken, doc->broken_why);
    }
    if (doc->cleared_epoch != 0 && doc->cleared_epoch == broken) failures_taken_back(broken);
    if (doc->drain && !drain_requested()) drain_asked();
  }
  source_stopped("the session left");
}

void ConnectedSession::report_drained(uint64_t step) {
  if (!drain_requested()) return;
  auto r = control::control_request(opt_.control_path, "drained " + std::to_string(opt_.slot) + " " + std::to_string(step),
                                    std::chrono::milliseconds(2000));
  auto ack = r ? control::parse_reply<control::CommittedReply>(*r)
               : Result<control::CommittedReply>(fail(r.error().message));
  if (!ack) {
    log::get(log::Component::agent).warn("drain: could not tell the agent that slot {} is done: {}", opt_.slot,
                                         ack.error().message);
  }
}

void ConnectedSession::peer_connection_broke(const std::string& name, uint64_t generation) {
  // Short: this runs in the failed collective's path, before the communicator's abort.
  auto r = control::control_request(opt_.control_path, "peer-lost " + name + " " + std::to_string(generation),
                                    std::chrono::milliseconds(200));
  if (!r) log::get(log::Component::agent).debug("could not tell the agent that {} was lost: {}", name, r.error().message);
}

}  // namespace shoal::session
