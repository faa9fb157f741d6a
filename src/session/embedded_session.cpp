// The embedded session: the agent's thread, and its observers feeding the session core.
#include "session/embedded_session.hpp"

#include <csignal>

#include "base/log.hpp"
#include "net/cluster_seal.hpp"
#include "net/host_port.hpp"

namespace shoal::session {

EmbeddedSession::EmbeddedSession(daemon::AgentConfig cfg, SessionOptions options)
    : SessionCore(std::move(options)), agent_(std::make_unique<daemon::Agent>(std::move(cfg))) {
  agent_->add_view_observer([this](const membership::View& v) { view_committed(v); });
  agent_->add_member_observer([this](const gossip::MemberEvent& e) {
    const auto state = e.member.state;
    if (state == gossip::State::dead || state == gossip::State::left) {
      member_failed(e.member.id.name, e.member.id.generation, gossip::to_string(state));
    } else if (state == gossip::State::alive) {
      member_back(e.member.id.name, e.member.id.generation);  // a refuted verdict, if it was one
    }
  });
  agent_->add_drain_observer([this](std::chrono::steady_clock::time_point) { drain_asked(); });
}

EmbeddedSession::~EmbeddedSession() { leave(); }

Status EmbeddedSession::begin() {
  if (auto started = agent_->start(); !started) return started;
  const auto ip = net::parse_ip_port(agent_->addr());
  if (!ip) return fail("the agent's address '" + agent_->addr() + "' is not numeric");
  SessionIdentity id;
  id.name = agent_->swim().self().name;
  id.generation = agent_->generation();
  id.bind_ip = ip->ip.to_string();
  id.rendezvous_hello = agent_->hello(wire::Hello::RENDEZVOUS);
  const auto& ckpt = agent_->checkpoints().config();
  id.checkpoints.job = ckpt.job;
  id.checkpoints.store = ckpt.store;
  id.checkpoints.store_by_lineage = ckpt.store_by_lineage;
  id.checkpoints.replicas = ckpt.replicas;
  id.checkpoints.holder = id.name;
  id.checkpoints.agent_addr = agent_->addr();
  id.checkpoints.ckpt_hello = agent_->hello(wire::Hello::CKPT_STREAM);
  id.checkpoints.rendezvous_timeout = opt_.rendezvous_timeout;
  id.checkpoints.committed = [agent = agent_.get()](uint32_t rank, uint64_t step) {
    agent->checkpoints().committed(rank, step);
  };
  id.checkpoints.safety = [agent = agent_.get()](uint32_t rank) -> Result<ckpt_service::RankSafety> {
    return agent->checkpoints().safety(rank);
  };
  // The ring that seals node health's timing records: the agent's key file, read again (it is a few lines).
  auto keys = net::load_cluster_keys(agent_->key_file());
  if (!keys) return fail("the cluster key: " + keys.error().message);
  if (*keys) id.keys = std::make_shared<const wire::KeyRing>(**keys);
  set_identity(std::move(id));
  if (opt_.leave_on_sigterm) leave_on_sigterm();
  loop_ = std::thread([this] {
    std::string why;
    if (auto outcome = agent_->run(); !outcome) {
      why = "the embedded agent stopped: " + outcome.error().message;
      log::get(log::Component::agent).error("{}", why);
    }
    source_stopped(why);
    if (const int sig = stop_signal_.load(); sig != 0) {
      // The leave is done: end the process as the signal would have, had nobody handled it.
      auto& logger = log::get(log::Component::agent);
      logger.info("left the cluster after SIGTERM; exiting as SIGTERM asks");
      logger.flush();
      ::signal(sig, SIG_DFL);
      ::raise(sig);
    }
  });
  return Ok{};
}

void EmbeddedSession::leave_on_sigterm() {
  // asio's signal_set: the handler runs on the agent's loop, not in signal context.
  sigterm_ = std::make_unique<boost::asio::signal_set>(agent_->io(), SIGTERM);
  sigterm_->async_wait([this](boost::system::error_code ec, int sig) {
    if (ec) return;
    stop_signal_ = sig;
    log::get(log::Component::agent).info("SIGTERM: leaving the cluster gracefully before exiting");
    agent_->stop();
    sigterm_->async_wait([this](boost::system::error_code ec2, int) {
      if (!ec2) agent_->stop_now();  // a second SIGTERM: at once
    });
  });
}

void EmbeddedSession::leave() {
  if (!loop_.joinable()) return;
  agent_->stop();
  loop_.join();
}

std::string EmbeddedSession::address() const { return agent_->addr(); }

void EmbeddedSession::peer_connection_broke(const std::string& name, uint64_t generation) {
  agent_->hint_failed(name, generation);
}

void EmbeddedSession::report_drained(uint64_t step) {
  if (drain_requested()) agent_->drained_slot(0, step);
}

void EmbeddedSession::report_health(const JobHealth& health) { agent_->report_health(health); }

void EmbeddedSession::report_trainer_stats(const health::TrainerStats& stats) {
  agent_->report_trainer_stats(0, stats);
}

}  // namespace shoal::session
