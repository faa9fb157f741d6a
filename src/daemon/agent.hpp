// The agent as a library: one member of a shoal cluster with its UDP/TCP port, gossip runtime and
// control socket on a single-threaded Asio loop. `shoal agent` is a thin main over this class; an
// embedding trainer runs the same class on a thread of its own.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "base/warn_limiter.hpp"
#include "ckpt_service/service.hpp"
#include "control/handlers.hpp"
#include "daemon/check/check_run.hpp"
#include "daemon/check/compute_probe.hpp"
#include "daemon/health_board.hpp"
#include "daemon/trainer_board.hpp"
#include "daemon/view_history.hpp"
#include "envelope.pb.h"
#include "gossip/swim.hpp"
#include "health/health_report.hpp"
#include "membership/view_keeper.hpp"
#include "net/cluster_seal.hpp"
#include "net/host_port.hpp"
#include "net/stream_hello.hpp"

namespace shoal::net {
class StreamListener;
}
namespace shoal::control {
class ControlServer;
}

namespace shoal::daemon {

namespace asio = boost::asio;

struct AgentConfig {
  std::string name;                           // member name, stable across restarts
  net::HostPort bind;                         // port 0: chosen by the OS
  std::optional<std::string> advertise_host;  // what others use to reach us; default: the bind host
  std::vector<net::HostPort> seeds;           // empty: start a new cluster
  std::string control_path;                   // empty: no control socket
  // A control socket that cannot be served (another process serves that path) is a warning, not a
  // failure of start(): an embedded session's default socket must never stop a trainer.
  bool control_path_optional = false;
  std::optional<uint32_t> control_group;      // the control socket's group (--control-group); nullopt: ours
  // Give up (run() fails) when no seed has answered within this time; nullopt: keep trying.
  std::optional<std::chrono::milliseconds> join_timeout;
  // --wait-hosts: no committed view with this member after this long from the start, or a view stalled with
  // fewer than min_hosts members alive for this long: run() fails with the reason (agent_wait_hosts.cpp), so
  // that a scheduler requeues the job. nullopt: wait for ever.
  std::optional<std::chrono::milliseconds> wait_hosts;
  // --want-hosts (with wait_hosts): the first committed view that includes this member is handed to the view
  // observers (the launcher, sessions) only once a view holds this many members, or once wait_hosts has passed
  // since the start (then with the min_hosts the view has at least). 0: the first view, as it comes.
  uint32_t want_hosts = 0;
  // How long a graceful stop keeps the loop running so that the leave gets out...
  std::chrono::milliseconds leave_grace{300};
  // ...and, while this member is still in the committed view, at most how long it lingers as an
  // acceptor so the others can commit the view without it. Without this, hosts leaving at once (the end
  // of a job, scancel) could take the majority of the last view with them and stall the rest.
  std::chrono::milliseconds leave_linger_max{3000};
  // With a checkpoint directory: how long a graceful stop waits for it to receive each local rank's
  // newest version (SIGTERM under systemd or Slurm) before exiting anyway.
  std::chrono::milliseconds persist_exit_wait{60'000};
  // The deadline of a `drain` request that names none (--drain-within).
  std::chrono::milliseconds drain_within{60'000};
  // How often to warn while no seed has answered.
  std::chrono::milliseconds join_warn_interval{5000};
  gossip::Config gossip;  // cluster_id lives here
  gossip::MemberMeta meta;
  membership::Config membership;
  // In-memory checkpoints: job, segment names, replicas, budget. An empty job means the cluster id.
  ckpt_service::CheckpointConfig ckpt;
  // The cluster key file (wire/cluster_key.hpp); empty: an open cluster, which start() warns about.
  std::string key_file;
  bool warn_open_cluster = true;  // false for the in-process demo, whose cluster lives on loopback only
  // Where to serve Prometheus metrics (/metrics); nullopt: nowhere.
  std::optional<net::HostPort> metrics;
  // The pre-flight check's compute probe (daemon/check/compute_probe.hpp); empty: this agent has none.
  check::ComputeProbe compute_probe;
  // --precheck: the first committed view that includes this member is held back from the view observers
  // (add_view_observer: the workers' launcher, an embedded session, systemd's status) until the check of that
  // view is over: its first member coordinates it with `precheck_options`, the others wait for its word, all
  // at most `precheck_wait`. A flagged host is logged as a warning; nothing is blocked for longer.
  bool precheck = false;
  // --precheck-exclude (with precheck): the hosts the check flags are excluded (membership/exclusion.hpp) by a
  // view change before the view is handed on, unless that would exclude a majority (then they are logged).
  bool precheck_exclude = false;
  check::CheckOptions precheck_options;
  std::chrono::milliseconds precheck_wait{30'000};
};

class GossipRuntime;
class MembershipRuntime;
class RendezvousService;
class SessionFeed;
class SeedResolver;
class MetricsServer;
class PromText;
namespace check {
class CheckMember;
}

class Agent {
 public:
  explicit Agent(AgentConfig cfg);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Binds the port, opens the control socket and joins. Errors (port in use, control socket held by
  // a live agent, a seed name that does not resolve) say what to change.
  Status start();
  // Runs the loop until stop() has finished, or the join timeout expired (then an error).
  Status run();
  // Graceful leave, then run() returns. Safe from any thread and from signal handlers' Asio callbacks.
  void stop();
  // Stops the loop at once, without a leave (a second Ctrl-C).
  void stop_now();

  // Valid after start().
  const std::string& addr() const { return addr_; }  // "ip:port" others reach us at
  uint16_t port() const { return port_; }
  uint16_t metrics_port() const;  // 0 without --metrics
  uint64_t generation() const { return generation_; }
  const std::string& control_path() const { return cfg_.control_path; }
  const std::string& key_file() const { return cfg_.key_file; }
  const gossip::Swim& swim() const;

  // Every member event, after the runtime has logged it (the membership layer subscribes here).
  // Call before start() or from the loop: observers run on the loop's thread.
  void add_member_observer(std::function<void(const gossip::MemberEvent&)> observer);
  // Every committed view, on the loop's thread. Call before start() or from the loop.
  void add_view_observer(std::function<void(const membership::View&)> observer);
  // The view keeper (valid after start()).
  const membership::ViewKeeper& keeper() const;
  // Control requests; add before start() or from the loop.
  control::ControlHandlers& control() { return control_handlers_; }
  // More TCP channels register here (view agreement, rendezvous store, checkpoint streams). After start().
  net::StreamListener& streams();
  asio::io_context& io() { return io_; }
  // In-memory checkpoints of this host (valid after start()).
  ckpt_service::CheckpointService& checkpoints();
  // The hello that opens a connection from this member on `channel` (for in-process clients such as the
  // rendezvous store of an embedded trainer). After start().
  net::OutgoingHello hello(wire::Hello::Channel channel) const;
  // Evidence from the data plane: a trainer's connection to `name` broke; gossip probes it at once
  // (Swim::hint_failed). Safe from any thread; does nothing before start() or after the loop ends.
  void hint_failed(const std::string& name, uint64_t generation);
  // SIGHUP: reads the key file again (a rotation step). Fails, keeping the old keys, when it cannot.
  Status reload_keys();
  // The local trainer's latest node-health verdict and figures (shoal health, status, metrics). Safe from
  // any thread: it is handed to the loop.
  void report_health(JobHealth health);
  // What local rank `slot`'s run lost so far (an embedded session's elastic loop; connected trainers send
  // `trainer-stats`): replaces that rank's previous report (shoal status, metrics). Safe from any thread.
  void report_trainer_stats(uint32_t slot, health::TrainerStats stats);

  // Drain (agent_drain.cpp; `shoal drain`, a spot notice, SIGTERM with --drain-on-sigterm): the session feed
  // tells the local trainers, which finish their step, save, wait until a peer holds that version and say so
  // (`drained SLOT STEP`); once every rank of this host did, and its newest versions are held by a peer, the
  // member leaves gracefully (a leave, not a failure the others detect). At `within` it leaves anyway. On the
  // loop. Fails, changing nothing, when this member is in no committed view, is its only member, or leaves.
  Status drain(std::chrono::milliseconds within, const std::string& why);
  bool draining() const { return draining_; }
  // Called once, on the loop, when a drain begins, with its deadline (the workers' launcher). Before start().
  void add_drain_observer(std::function<void(std::chrono::steady_clock::time_point deadline)> observer);
  // During a drain a graceful stop keeps the process, once the leave went out, while `busy` says so (the
  // launcher: its workers are still exiting), at most until the drain's deadline. Before start().
  void hold_exit_while(std::function<bool()> busy);
  // A trainer of this host reports its drain done (Session::report_drained). Safe from any thread.
  void drained_slot(uint32_t slot, uint64_t step);

 private:
  void begin_leave();
  // agent_drain.cpp: the drain's requests, its deadline, and the wait for replicas before the leave.
  void serve_drain_requests();
  std::string drain_reply(std::span<const std::string> args);
  std::string drained_reply(std::span<const std::string> args);
  void take_drained(uint32_t slot, uint64_t step);
  std::vector<uint32_t> local_ranks() const;  // this host's global ranks in the committed view
  bool replicas_pending() const;              // a local rank's newest version is not held by its peers yet
  void leave_drained(const std::string& why);
  void linger(std::chrono::steady_clock::time_point since);
  bool view_peers_gone() const;  // every other member of the committed view has left or died
  void finish(Status outcome);
  void watch_join();
  bool in_committed_view() const;
  std::string members_reply() const;
  std::string view_reply() const;
  std::string force_reply(std::span<const std::string> args);
  std::string committed_reply(std::span<const std::string> args);
  std::string safety_reply(std::span<const std::string> args) const;
  std::string peer_lost_reply(std::span<const std::string> args);
  std::string status_reply() const;  // agent_status.cpp
  void serve_history_requests();     // agent_status.cpp: `view-history`, every view change kept
  std::string health_reply() const;  // agent_health.cpp
  // agent_health.cpp: a connected trainer's `health-report` part (health/health_report.hpp), checked.
  std::string health_report_reply(std::span<const std::string> args);
  // On the loop: a verdict from the local trainer(s); several slots report the same one, the newest counts.
  void take_health(JobHealth health);
  std::string eviction_line() const;  // agent_health.cpp: what eviction does now, for status and health
  // reports/agent_trainers.cpp: the `trainer-stats` request, and the reports in metrics and status.
  void serve_trainer_requests();
  std::string trainer_stats_reply(std::span<const std::string> args);
  void trainer_metrics(PromText& m) const;
  uint32_t trainer_ranks() const;    // local ranks admitted: below the slots (at least 1) and kMaxTrainerRanks
  std::string metrics_text() const;  // agent_metrics.cpp
  // The pre-flight check (agent_check.cpp): the control request, one run, and --precheck's hold on views.
  void serve_check_requests();
  void check_request(std::span<const std::string> args, control::ControlHandlers::Reply reply);
  Status run_check(check::CheckOptions options, check::CheckRun::Done done);
  void on_gated_view(const membership::View& v);
  // agent_wait_hosts.cpp: --wait-hosts' deadline and --want-hosts' hold on the first view.
  void watch_hosts();
  bool hold_for_hosts(const membership::View& v);  // true: held back (held_for_hosts_) until enough hosts
  void release_for_hosts(const std::string& why);
  void start_precheck();
  void release_views(const std::string& why);
  // agent_exclude.cpp: `view-exclude` / `view-readmit`, answered once a committed view carries the change, and
  // --precheck-exclude's exclusion of the flagged hosts before the first view is handed on.
  void serve_exclude_requests();
  void exclude_request(std::span<const std::string> args, bool excluding, control::ControlHandlers::Reply reply);
  void settle_exclusion_waits(const membership::View& v);
  // --precheck-exclude: the check flagged `flagged`; true when views stay held for their exclusion.
  bool precheck_excludes(const std::vector<std::string>& flagged, bool propose);

  AgentConfig cfg_;
  asio::io_context io_;
  std::chrono::steady_clock::time_point origin_;  // time zero of the gossip core: the start
  std::chrono::steady_clock::time_point next_join_warn_;
  std::string addr_;
  uint16_t port_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::string> seed_addrs_;
  control::ControlHandlers control_handlers_;
  std::shared_ptr<net::ClusterSeal> seal_;
  std::unique_ptr<net::StreamListener> listener_;
  std::unique_ptr<GossipRuntime> runtime_;
  std::unique_ptr<SeedResolver> seed_resolver_;  // seed names looked up (again) in the background
  std::unique_ptr<MembershipRuntime> membership_;
  std::unique_ptr<RendezvousService> rendezvous_;
  std::unique_ptr<SessionFeed> session_feed_;
  std::unique_ptr<ckpt_service::CheckpointService> checkpoints_;  // what connected trainers follow (control socket)
  // The observers of add_view_observer, behind --precheck's hold (agent_check.cpp).
  std::vector<std::function<void(const membership::View&)>> gated_view_observers_;
  std::optional<membership::View> held_view_;  // the newest view held back while the precheck runs
  bool precheck_pending_ = false;              // views are held back
  bool precheck_started_ = false;              // the first view with this member came
  bool check_running_ = false;                 // a check coordinated here is in flight
  std::vector<std::string> precheck_excluding_;  // --precheck-exclude: views held until one excludes these
  struct ExclusionWait;                          // a view-exclude/readmit request waiting for its commit
  std::vector<std::shared_ptr<ExclusionWait>> exclusion_waits_;
  std::unique_ptr<check::CheckMember> check_member_;
  std::unique_ptr<control::ControlServer> control_server_;
  ViewHistory history_;  // the last committed views, for `shoal status` and `view-history`
  HealthBoard health_;   // the local trainer's straggler verdict, for `shoal health`
  health::ReportAssembler health_parts_;  // connected trainers' reports, part by part
  uint64_t health_reports_rejected_ = 0;  // health-report parts refused (malformed, out of order, unknown epoch)
  log::WarnLimiter health_report_warn_{std::chrono::seconds(60)};
  TrainerBoard trainers_;               // the local trainers' run figures, by local rank
  uint64_t trainer_stats_refused_ = 0;  // trainer-stats requests refused (malformed, out of range, no such rank)
  log::WarnLimiter trainer_stats_warn_{std::chrono::seconds(60)};
  std::unique_ptr<MetricsServer> metrics_;
  std::vector<std::function<void(const gossip::MemberEvent&)>> pending_observers_;
  asio::steady_timer leave_timer_;
  asio::steady_timer join_timer_;
  asio::steady_timer precheck_timer_;  // --precheck's longest wait
  bool joined_ = false;           // another member is alive now (until the first committed view)
  bool heard_of_others_ = false;  // some member answered since start
  bool leaving_ = false;
  bool left_on_purpose_ = false;  // the graceful leave ran to its end (finish removes the job's segments)
  bool draining_ = false;         // drain() began (agent_drain.cpp)
  bool drain_leaving_ = false;    // the drain's leave is under way (waiting for replicas, or left)
  std::chrono::steady_clock::time_point drain_deadline_{};
  std::set<uint32_t> drained_slots_;
  std::vector<std::function<void(std::chrono::steady_clock::time_point)>> drain_observers_;
  std::function<bool()> exit_busy_;
  asio::steady_timer drain_timer_;
  asio::steady_timer hosts_timer_;
  bool hosts_gate_ = true;  // --want-hosts: the first view is not handed on yet
  std::optional<membership::View> held_for_hosts_;
  std::optional<std::chrono::steady_clock::time_point> short_of_hosts_since_;  // stalled below min_hosts since
  Status outcome_ = Ok{};
};

}  // namespace shoal::daemon
