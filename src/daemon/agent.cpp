// Agent: start-up (port, control socket, seeds), the join watch, and the graceful stop.
#include "daemon/agent.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <charconv>
#include <optional>
#include <random>

#include "base/log.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "control/server.hpp"
#include "control/socket_path.hpp"
#include "daemon/check/check_member.hpp"
#include "daemon/gossip_runtime.hpp"
#include "gossip/member_table.hpp"
#include "membership/desired_view.hpp"
#include "daemon/membership_runtime.hpp"
#include "daemon/metrics_server.hpp"
#include "daemon/rendezvous_service.hpp"
#include "daemon/reports/members_report.hpp"
#include "daemon/reports/stats_report.hpp"
#include "daemon/reports/view_report.hpp"
#include "daemon/seed_resolver.hpp"
#include "daemon/session_feed.hpp"
#include "net/host_port.hpp"
#include "net/port_binding.hpp"
#include "net/stream_hello.hpp"
#include "net/stream_listener.hpp"
#include "wire/packet.hpp"

namespace shoal::daemon {
namespace {

// How often the join watch looks whether a seed has answered.
constexpr std::chrono::milliseconds kJoinPoll{250};
// Seed names looked up while the agent starts (the rest only in the background, so that a Slurm job of
// thousands of nodes, whose every agent is handed all the node names, does not start with thousands of
// blocking lookups).
constexpr size_t kSeedsLookedUpAtStart = 8;

// A numeric address as is; a name through the resolver (IPv4 preferred). Runs before the loop does.
Result<asio::ip::address> resolve_host(asio::io_context& io, const std::string& host) {
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(host, ec);
  if (!ec) return ip;
  asio::ip::tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, "", ec);
  if (ec || results.empty()) return fail("cannot resolve host '" + host + "'" + (ec ? ": " + ec.message() : ""));
  for (const auto& r : results) {
    if (r.endpoint().address().is_v4()) return r.endpoint().address();
  }
  return results.begin()->endpoint().address();
}

// For a wildcard bind: the first non-loopback address of this host's name.
Result<asio::ip::address> host_address(asio::io_context& io) {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return fail("cannot read the host name");
  asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto results = resolver.resolve(name, "", ec);
  if (!ec) {
    for (const auto& r : results) {
      if (!r.endpoint().address().is_loopback()) return r.endpoint().address();
    }
  }
  return fail(std::string("the host name '") + name + "' resolves to no usable address");
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// New at every start, strictly positive: wall-clock microseconds (a restart within the same
// microsecond is not a concern for processes that take milliseconds to start).
uint64_t new_generation() {
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  return us > 0 ? static_cast<uint64_t>(us) : 1;
}

}  // namespace

Agent::Agent(AgentConfig cfg)
    : cfg_(std::move(cfg)), leave_timer_(io_), join_timer_(io_), precheck_timer_(io_), drain_timer_(io_),
      hosts_timer_(io_) {
  session_feed_ = std::make_unique<SessionFeed>(io_, control_handlers_, [this] {
    return SessionInfo{cfg_.name,
                       generation_,
                       addr_,
                       cfg_.gossip.cluster_id,
                       cfg_.meta.slots,
                       checkpoints_ ? checkpoints_->config().job : std::string(),
                       checkpoints_ ? checkpoints_->config().store : std::string(),
                       cfg_.key_file,
                       checkpoints_ && checkpoints_->config().store_by_lineage,
                       checkpoints_ ? static_cast<int64_t>(checkpoints_->config().replicas) : int64_t{-1}};
  });
  control_handlers_.add("members", "this member's view of the cluster and the inputs it refused",
                        [this](std::span<const std::string> args) {
                          if (!args.empty()) return control_handlers_.error_reply("members takes no arguments");
                          return members_reply();
                        });
  control_handlers_.add("view", "the committed view, its status and the ranks derived from it",
                        [this](std::span<const std::string> args) {
                          if (!args.empty()) return control_handlers_.error_reply("view takes no arguments");
                          return view_reply();
                        });
  control_handlers_.add("view-force", "operator override: commit the live set without a majority (`yes` to confirm)",
                        [this](std::span<const std::string> args) { return force_reply(args); },
                        control::Access::owner);
  control_handlers_.add("ckpt-ls", "the checkpoint versions this host holds: its ranks' own and its replicas",
                        [this](std::span<const std::string> args) {
                          const bool verify = args.size() == 1 && args[0] == "verify";
                          if (!args.empty() && !verify) return control_handlers_.error_reply("usage: ckpt-ls [verify]");
                          if (!checkpoints_) return control_handlers_.error_reply("the agent has not started");
                          return checkpoints_->ls_json(verify);
                        });
  control_handlers_.add_with_caller(
      "ckpt-committed", "a local trainer sealed a version: ckpt-committed RANK STEP",
      [this](std::span<const std::string> args, const control::Caller& caller) {
        // The kernel names the trainer's user: its slots are expected to be that user's (a trainer in
        // this process, or a caller the kernel could not name, changes nothing).
        if (caller.known && checkpoints_ && caller.pid != ::getpid()) {
          checkpoints_->trust_slot_writer(ckpt::SegmentOwner{caller.uid, caller.gid});
        }
        return committed_reply(args);
      },
      control::Access::local);
  control_handlers_.add("peer-lost",
                        "a local trainer's connection to a member broke: peer-lost NAME GENERATION (probed at once)",
                        [this](std::span<const std::string> args) { return peer_lost_reply(args); },
                        control::Access::local);
  control_handlers_.add("ckpt-safe", "how safe a local rank's newest checkpoint is: ckpt-safe RANK",
                        [this](std::span<const std::string> args) { return safety_reply(args); });
  control_handlers_.add("status",
                        "one screen for operators: this host, the view, members by state, the last view "
                        "changes, checkpoints and replication lag",
                        [this](std::span<const std::string> args) {
                          if (!args.empty()) return control_handlers_.error_reply("status takes no arguments");
                          return status_reply();
                        });
  control_handlers_.add("health",
                        "node health: each host's compute and wait per step as the local trainer measured them on "
                        "the job's steps, and the straggler verdict",
                        [this](std::span<const std::string> args) {
                          if (!args.empty()) return control_handlers_.error_reply("health takes no arguments");
                          return health_reply();
                        });
  control_handlers_.add(
      health::kHealthReportRequest,
      "a connected trainer's node-health figures and straggler verdict, in parts: health-report 1 SLOT PART PARTS ...",
      [this](std::span<const std::string> args) { return health_report_reply(args); }, control::Access::local);
  control_handlers_.add("stats", "the gossip core's counters and local health", [this](std::span<const std::string>) {
    if (!runtime_) return control_handlers_.error_reply("the agent has not started");
    return stats_json(runtime_->swim(), listener_->rejected());
  });
}

Agent::~Agent() = default;

const gossip::Swim& Agent::swim() const { return runtime_->swim(); }

net::StreamListener& Agent::streams() { return *listener_; }

ckpt_service::CheckpointService& Agent::checkpoints() { return *checkpoints_; }

net::OutgoingHello Agent::hello(wire::Hello::Channel channel) const {
  return net::OutgoingHello(
      net::encode_hello(wire::make_envelope(cfg_.gossip.cluster_id, cfg_.name, generation_, addr_), channel), seal_);
}

void Agent::report_health(JobHealth health) {
  asio::post(io_, [this, health = std::move(health)]() mutable {
    take_health(std::move(health));
  });
}

void Agent::take_health(JobHealth health) {
  // Eviction acts only on figures verified under the cluster key (health/record_seal.hpp); start()
  // refuses --evict-stragglers in an open cluster, this guards a session that could not seal.
  if (membership_ && health.authenticated) membership_->verdict(health.epoch, health.stragglers, health.step);
  health_.update(std::move(health), std::chrono::steady_clock::now());
}

Status Agent::reload_keys() {
  if (!seal_) return fail(std::string("the agent has not started"));
  auto keys = net::load_cluster_keys(cfg_.key_file);
  if (!keys) return fail(keys.error().message);
  if (auto ok = seal_->set_keys(std::move(*keys)); !ok) return ok;
  if (seal_->keyed())
    log::agent().info("cluster key reloaded from {}: key ids {} (the first seals)", cfg_.key_file, seal_->key_ids());
  return Ok{};
}

void Agent::add_member_observer(std::function<void(const gossip::MemberEvent&)> observer) {
  if (runtime_) {
    runtime_->add_observer(std::move(observer));
  } else {
    pending_observers_.push_back(std::move(observer));
  }
}

const membership::ViewKeeper& Agent::keeper() const { return membership_->keeper(); }

void Agent::add_view_observer(std::function<void(const membership::View&)> observer) {
  gated_view_observers_.push_back(std::move(observer));  // on_gated_view (agent_check.cpp) calls them
}

std::string Agent::view_reply() const {
  if (!membership_) return control_handlers_.error_reply("the agent has not started");
  const auto& k = membership_->keeper();
  auto reply = view_report(cfg_.name, k.view(), k.status());
  reply.keyed = seal_ && seal_->keyed();
  for (size_t i = 0; i < membership::kViewRefusals; ++i) {
    reply.refused[std::string(membership::name(static_cast<membership::ViewRefusal>(i)))] = k.stats().refused[i];
  }
  return control::write_reply(reply);
}

std::string Agent::committed_reply(std::span<const std::string> args) {
  const auto number = [](const std::string& text, uint64_t max) -> std::optional<uint64_t> {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v > max) return std::nullopt;
    return v;
  };
  const auto rank = args.size() == 2 ? number(args[0], UINT32_MAX) : std::nullopt;
  const auto step = args.size() == 2 ? number(args[1], UINT64_MAX) : std::nullopt;
  if (!rank || !step) return control_handlers_.error_reply("usage: ckpt-committed RANK STEP (non-negative integers)");
  if (!checkpoints_) return control_handlers_.error_reply("the agent has not started");
  checkpoints_->committed(static_cast<uint32_t>(*rank), *step);
  return control::write_reply(control::CommittedReply{true});
}

std::string Agent::peer_lost_reply(std::span<const std::string> args) {
  uint64_t generation = 0;
  const bool ok = args.size() == 2 && !args[0].empty() && args[0].size() <= gossip::MemberTable::kMaxNameBytes && [&] {
    const auto [end, ec] = std::from_chars(args[1].data(), args[1].data() + args[1].size(), generation);
    return ec == std::errc() && end == args[1].data() + args[1].size();
  }();
  if (!ok) return control_handlers_.error_reply("usage: peer-lost NAME GENERATION");
  if (runtime_ && !leaving_) runtime_->hint_failed(args[0], generation);  // on the loop already
  return control::write_reply(control::CommittedReply{true});
}

std::string Agent::safety_reply(std::span<const std::string> args) const {
  uint32_t rank = 0;
  const bool ok = args.size() == 1 && [&] {
    const auto [end, ec] = std::from_chars(args[0].data(), args[0].data() + args[0].size(), rank);
    return ec == std::errc() && end == args[0].data() + args[0].size();
  }();
  if (!ok) return control_handlers_.error_reply("usage: ckpt-safe RANK (a non-negative integer)");
  if (!checkpoints_) return control_handlers_.error_reply("the agent has not started");
  const auto s = checkpoints_->safety(rank);
  return control::write_reply(control::CkptSafeReply{rank, s.committed, s.replicated, s.holders, s.persisting, s.persisted});
}

std::string Agent::force_reply(std::span<const std::string> args) {
  if (!membership_) return control_handlers_.error_reply("the agent has not started");
  if (args.size() != 1 || args[0] != "yes") {
    return control_handlers_.error_reply("view-force needs the confirmation word: view-force yes");
  }
  const Status st = membership_->force();
  control::ForceReply reply{st.ok(), std::nullopt, membership_->keeper().view().epoch()};
  if (!st) reply.error = st.error().message;
  return control::write_reply(reply);
}

std::string Agent::members_reply() const {
  if (!runtime_) return control_handlers_.error_reply("the agent has not started");
  const auto& swim = runtime_->swim();
  return members_json(cfg_.name, swim.members(), swim.stats().rejected, listener_->rejected());
}

Status Agent::start() {
  if (runtime_) return fail("the agent is already started");
  if (cfg_.name.empty()) return fail("the member name is empty");
  if (cfg_.meta.host.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) cfg_.meta.host = host;
  }

  auto keys = net::load_cluster_keys(cfg_.key_file);
  if (!keys) return fail("--key-file: " + keys.error().message);
  seal_ = std::make_shared<net::ClusterSeal>(std::move(*keys));
  if (cfg_.membership.eviction.enabled && !seal_->keyed()) {
    // The figures ride the job's own collectives, which no key protects in an open cluster: anyone who
    // reaches them could evict a healthy host.
    return fail("--evict-stragglers needs a cluster key (--key-file): eviction acts only on timing figures "
                "sealed with it, and an open cluster (--insecure) has none");
  }
  if (seal_->keyed()) {
    log::agent().info("cluster key from {}: key ids {} (the first seals); unsealed packets and connections are refused",
                      cfg_.key_file, seal_->key_ids());
  }

  origin_ = std::chrono::steady_clock::now();
  next_join_warn_ = origin_ + cfg_.join_warn_interval;
  auto bind_ip = resolve_host(io_, cfg_.bind.host);
  if (!bind_ip) return fail("--bind: " + bind_ip.error().message);
  auto bound = net::bind_shared_port(io_, *bind_ip, cfg_.bind.port);
  if (!bound) return fail(bound.error().message);
  port_ = bound->port;
  if (bound->udp_receive_bytes < net::kGossipReceiveBufferBytes) {
    log::agent().debug("gossip's UDP receive buffer is {} bytes (asked for {}; net.core.rmem_max caps it)",
                       bound->udp_receive_bytes, net::kGossipReceiveBufferBytes);
  }

  Result<asio::ip::address> advertised = *bind_ip;
  if (cfg_.advertise_host) {
    advertised = resolve_host(io_, *cfg_.advertise_host);
  } else if (bind_ip->is_unspecified()) {
    advertised = host_address(io_);
    if (!advertised) return fail(advertised.error().message + "; pass --advertise HOST");
  }
  if (!advertised) return fail("--advertise: " + advertised.error().message);
  addr_ = net::ip_port_text(*advertised, port_);

  // Seeds: numeric ones at once, the first few names looked up here, every name again in the background.
  auto start_seeds = seeds_at_start(cfg_.seeds, addr_, kSeedsLookedUpAtStart, [this](const net::HostPort& seed) {
    auto r = resolve_host(io_, seed.host);
    if (r) return std::optional<asio::ip::address>(*r);
    log::agent().warn("seed {}: {}; looking it up again in the background", seed.to_string(), r.error().message);
    return std::optional<asio::ip::address>();
  });
  seed_addrs_ = std::move(start_seeds.addrs);
  std::vector<net::HostPort> names = std::move(start_seeds.names);
  cfg_.membership.joining = !seed_addrs_.empty() || start_seeds.maybe_peer;

  if (!cfg_.control_path.empty()) {
    Status served = control::prepare_control_dir(cfg_.control_path);
    if (served) {
      control_server_ = std::make_unique<control::ControlServer>(io_, control_handlers_);
      served = control_server_->open(cfg_.control_path, cfg_.control_group);
      if (!served) control_server_.reset();
    }
    if (!served && !cfg_.control_path_optional) return fail(served.error().message);
    if (!served) {
      log::agent().warn("no control socket: {} (`shoal status` will not find this member)", served.error().message);
      cfg_.control_path.clear();
    }
  }
  if (cfg_.metrics) {
    metrics_ = std::make_unique<MetricsServer>(io_, [this] { return metrics_text(); });
    if (auto opened = metrics_->open(*cfg_.metrics); !opened) {
      metrics_.reset();
      return fail(opened.error().message);
    }
  }

  generation_ = new_generation();
  std::random_device entropy;
  const uint64_t rng_seed = (uint64_t(entropy()) << 32) ^ entropy() ^ generation_;
  gossip::Swim swim(cfg_.gossip, gossip::Identity{cfg_.name, generation_, addr_}, cfg_.meta, rng_seed);

  listener_ = std::make_unique<net::StreamListener>(std::move(bound->tcp), cfg_.gossip.cluster_id,
                                                    net::StreamListener::Limits{});
  listener_->set_seal(seal_, addr_);
  runtime_ = std::make_unique<GossipRuntime>(io_, std::move(bound->udp), std::move(swim), origin_, *listener_, seal_);
  for (auto& o : pending_observers_) runtime_->add_observer(std::move(o));
  pending_observers_.clear();
  membership_ = std::make_unique<MembershipRuntime>(
      io_, membership::ViewKeeper(cfg_.membership, gossip::Identity{cfg_.name, generation_, addr_}, rng_seed ^ 0x5eed),
      runtime_->swim(), origin_, *listener_, cfg_.gossip.cluster_id, seal_);
  rendezvous_ = std::make_unique<RendezvousService>(io_, *listener_, origin_);
  if (cfg_.ckpt.job.empty()) cfg_.ckpt.job = cfg_.gossip.cluster_id;
  checkpoints_ = std::make_unique<ckpt_service::CheckpointService>(cfg_.ckpt, cfg_.name,
                                                                   [this] { return hello(wire::Hello::CKPT_STREAM); });
  if (auto ok = checkpoints_->start(*listener_); !ok) {
    checkpoints_.reset();
    return fail(ok.error().message);
  }
  // The store learns of a view before anyone else on this loop, so a superseded wait fails first.
  membership_->add_view_observer([this](const membership::View& v) {
    rendezvous_->on_committed(v.epoch(), v.total_slots());
    checkpoints_->on_view(v);
    history_.on_view(v);
    // Joiners of the view whose news has not reached this member's gossip yet stay in its next view.
    if (runtime_ && !leaving_) runtime_->vouch(membership::vouched_by(v));
  });
  // Connected trainers see a view when in-process observers do: after --precheck's check of the first one.
  gated_view_observers_.insert(gated_view_observers_.begin(),
                               [this](const membership::View& v) { session_feed_->on_view(v); });
  runtime_->add_observer([this](const gossip::MemberEvent& e) {
    history_.on_member(e);
    session_feed_->on_member(e);
  });
  serve_check_requests();
  serve_drain_requests();
  serve_exclude_requests();
  serve_trainer_requests();
  serve_history_requests();
  membership_->add_view_observer([this](const membership::View& v) { on_gated_view(v); });
  runtime_->add_observer([this](const gossip::MemberEvent&) { membership_->gossip_changed(); });

  // Only now: an agent that a bad address, control socket or directory stops never warned about a cluster it
  // did not run.
  if (!seal_->keyed() && cfg_.warn_open_cluster) {
    log::agent().warn(
        "the cluster is open (--insecure, no cluster key): any host that reaches this port can join, read the "
        "member list and checkpoints, and send views (see `shoal keygen`)");
  }
  log::agent().info(
      "{} (generation {}) on {}{}", cfg_.name, generation_, addr_,
      !cfg_.membership.joining
          ? std::string(", starting a new cluster")
          : ", joining via " + (seed_addrs_.empty() ? std::string("seeds not resolved yet") : join_list(seed_addrs_)));
  listener_->start();
  runtime_->start(seed_addrs_);
  if (!names.empty()) {
    seed_resolver_ = std::make_unique<SeedResolver>(
        io_, std::move(names), addr_,
        [this](std::vector<std::string> addrs) {
          if (!runtime_ || leaving_) return;
          for (const auto& a : addrs) {
            if (std::find(seed_addrs_.begin(), seed_addrs_.end(), a) == seed_addrs_.end()) seed_addrs_.push_back(a);
          }
          runtime_->add_seeds(addrs);
        },
        [this] {  // looking for members: no committed view yet, or one below --min-hosts (after losses)
          return !in_committed_view() || membership_->keeper().view().size() < cfg_.membership.min_hosts;
        },
        SeedResolver::Timing{});
    seed_resolver_->start();
  }
  membership_->gossip_changed();
  joined_ = !cfg_.membership.joining;
  if (!joined_) watch_join();
  watch_hosts();
  return Ok{};
}

bool Agent::in_committed_view() const {
  const auto& view = membership_->keeper().view();
  return view.epoch() > 0 && view.find(cfg_.name) != nullptr;
}

void Agent::watch_join() {
  join_timer_.expires_after(kJoinPoll);
  join_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || leaving_) return;
    // The watch lasts until this host is in a committed view: a seed that answered and then left before
    // a view formed leaves it alone again, and a host started with seeds never forms a cluster by itself
    // (membership::Config::joining), so it goes on trying its seeds (gossip's push-pull retries) and the
    // join timeout still applies.
    const size_t live = runtime_->swim().live_count();
    if (in_committed_view()) {
      if (!joined_) log::agent().info("joined the cluster: {} live members", live);
      joined_ = true;
      return;
    }
    if (live > 1 && !joined_) {
      joined_ = true;
      heard_of_others_ = true;
      log::agent().info("joined the cluster: {} live members", live);
    } else if (live <= 1 && joined_) {
      joined_ = false;
      log::agent().warn("every member heard of left before a view formed; still trying {}", join_list(seed_addrs_));
    }
    const auto now = std::chrono::steady_clock::now();
    if (live <= 1 && cfg_.join_timeout && now - origin_ >= *cfg_.join_timeout) {
      const std::string what =
          heard_of_others_
              ? fmt::format("alone with no committed view after {:.1f} s: the members heard of left before a view "
                            "formed, and no seed answers now (seeds: {})",
                            cfg_.join_timeout->count() / 1000.0, join_list(seed_addrs_))
              : fmt::format("no seed answered within {:.1f} s (seeds: {})", cfg_.join_timeout->count() / 1000.0,
                            join_list(seed_addrs_));
      log::agent().error("{}", what);
      finish(fail(what));
      return;
    }
    if (live <= 1 && now >= next_join_warn_) {
      next_join_warn_ = now + cfg_.join_warn_interval;
      if (!heard_of_others_) log::agent().warn("no seed has answered yet; still trying {}", join_list(seed_addrs_));
    }
    watch_join();
  });
}

void Agent::stop() {
  asio::post(io_, [this] { begin_leave(); });
}

void Agent::hint_failed(const std::string& name, uint64_t generation) {
  asio::post(io_, [this, name, generation] {
    if (runtime_ && !leaving_) runtime_->hint_failed(name, generation);
  });
}

void Agent::stop_now() {
  asio::post(io_, [this] { finish(Ok{}); });
}

void Agent::begin_leave() {
  if (leaving_) return;
  leaving_ = true;
  join_timer_.cancel();
  if (seed_resolver_) seed_resolver_->stop();
  if (!runtime_) return finish(Ok{});
  log::agent().info("leaving the cluster");
  runtime_->leave();
  if (checkpoints_) checkpoints_->flush_persisted();
  linger(std::chrono::steady_clock::now());
}

void Agent::linger(std::chrono::steady_clock::time_point since) {
  leave_timer_.expires_after(std::chrono::milliseconds(50));
  leave_timer_.async_wait([this, since](boost::system::error_code ec) {
    if (ec) return;
    const auto waited = std::chrono::steady_clock::now() - since;
    if (waited < cfg_.leave_grace) return linger(since);
    const auto& view = membership_->keeper().view();
    // Lingering serves the others' next view; once all of them have left too (the end of a job,
    // scancel) there is nobody to serve.
    const bool in_view = view.find(cfg_.name) != nullptr && view.size() > 1 && !view_peers_gone();
    if (in_view && waited < cfg_.leave_linger_max) return linger(since);
    // A drained host's workers end on their own after their last save: the process waits for them.
    if (draining_ && exit_busy_ && exit_busy_() && std::chrono::steady_clock::now() < drain_deadline_) {
      return linger(since);
    }
    // The checkpoint directory gets the newest versions before the process goes (SIGTERM is the last
    // word a scheduler says before SIGKILL).
    if (checkpoints_ && checkpoints_->persisting()) {
      if (waited < cfg_.persist_exit_wait) return linger(since);
      log::agent().warn("exiting after {:.0f} s with checkpoint versions still being persisted",
                        std::chrono::duration<double>(waited).count());
    }
    if (in_view) {
      log::agent().warn("left while still in the committed view of epoch {}: the others commit without us on their own",
                        view.epoch());
    }
    left_on_purpose_ = true;
    finish(Ok{});
  });
}

bool Agent::view_peers_gone() const {
  const auto members = runtime_->swim().members();
  for (const auto& vm : membership_->keeper().view().members()) {
    if (vm.name == cfg_.name) continue;
    const auto it = std::find_if(members.begin(), members.end(), [&](const gossip::Member& m) {
      return m.id.name == vm.name && m.id.generation == vm.generation;
    });
    if (it != members.end() && (it->state == gossip::State::alive || it->state == gossip::State::suspect)) {
      return false;
    }
  }
  return true;
}

void Agent::finish(Status outcome) {
  outcome_ = std::move(outcome);
  leaving_ = true;
  join_timer_.cancel();
  leave_timer_.cancel();
  precheck_timer_.cancel();
  if (seed_resolver_) seed_resolver_->stop();
  drain_timer_.cancel();
  hosts_timer_.cancel();
  if (check_member_) check_member_->stop();
  if (control_server_) control_server_->close();
  if (metrics_) metrics_->close();
  if (listener_) listener_->close();
  if (membership_) membership_->close();
  if (runtime_) runtime_->close();
  if (checkpoints_) {
    checkpoints_->stop();
    // A leave the operator asked for ends this host's part in the job: give /dev/shm back. A crash or
    // stop_now keeps the segments for a restarted agent (and `shoal ckpt gc`).
    if (left_on_purpose_ && !checkpoints_->config().keep_on_exit) (void)checkpoints_->remove_segments_at_exit();
  }
  io_.stop();
}

Status Agent::run() {
  if (!runtime_) return fail("the agent was not started");
  io_.run();
  return outcome_;
}

}  // namespace shoal::daemon
