// Session::start: SessionOptions, checked, into an AgentConfig; then the embedded session.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include "base/log.hpp"
#include "base/member_name.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "control/socket_path.hpp"
#include "session/connected_session.hpp"
#include "session/embedded_session.hpp"

namespace shoal {

namespace {

Error bad(const std::string& what) { return Error("shoal session: " + what); }

// A peer that closes its connection while this process writes to it must cost an error on that
// connection, never the trainer: shoal's own sends pass MSG_NOSIGNAL, but Gloo's transport writes
// with writev, which raises SIGPIPE. So a session ignores SIGPIPE unless the program chose a handler.
void ignore_sigpipe_unless_handled() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) != 0) return;
  if (current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO) != 0) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, nullptr);
}

void setup_logging(const SessionOptions& options) {
  if (options.log_spec.empty()) return;
  auto spec = log::parse_spec(options.log_spec);
  if (!spec) throw bad("log_spec: " + spec.error().message);
  log::setup(*spec);
}

}  // namespace

std::unique_ptr<Session> Session::start(const SessionOptions& options) {
  setup_logging(options);
  ignore_sigpipe_unless_handled();
  daemon::AgentConfig cfg;
  cfg.name = options.name;
  if (cfg.name.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) cfg.name = host;
  }
  if (auto ok = check_member_name(cfg.name); !ok) throw bad(ok.error().message);
  auto bind = net::parse_host_port(options.bind, net::PortZero::allowed);
  if (!bind) throw bad("bind: " + bind.error().message);
  cfg.bind = *bind;
  for (const auto& seed : options.seeds) {
    auto hp = net::parse_host_port(seed);
    if (!hp) throw bad("seed: " + hp.error().message);
    cfg.seeds.push_back(*hp);
  }
  if (!options.advertise.empty()) cfg.advertise_host = options.advertise;
  cfg.gossip.cluster_id = options.cluster.empty() ? "default" : options.cluster;
  if (options.slots != 1) throw bad("an embedded session drives exactly one rank (slots = 1)");
  cfg.meta.slots = options.slots;
  if (options.min_hosts < 1) throw bad("min_hosts must be at least 1");
  if (options.max_hosts != 0 && options.max_hosts < options.min_hosts) throw bad("max_hosts is below min_hosts");
  cfg.membership.min_hosts = options.min_hosts;
  cfg.membership.max_hosts = options.max_hosts;
  // The control socket, as `shoal agent` serves it, so that `shoal status` finds embedded agents too:
  // at the default path for the name unless told where, or "none".
  if (options.control_path == "none") {
    cfg.control_path.clear();
  } else if (options.control_path.empty()) {
    cfg.control_path = control::default_control_path(cfg.name, control::probe_control_dirs());
    cfg.control_path_optional = true;
  } else {
    cfg.control_path = options.control_path;
  }
  // Checkpoints: the job defaults to the cluster id when that is a valid job name.
  cfg.ckpt.job = options.job;
  cfg.ckpt.job_named = !options.job.empty();
  if (cfg.ckpt.job.empty())
    cfg.ckpt.job = ckpt::check_job_name(cfg.gossip.cluster_id) ? cfg.gossip.cluster_id : "shoal";
  if (auto ok = ckpt::check_job_name(cfg.ckpt.job); !ok) throw bad("job: " + ok.error().message);
  if (!options.host.empty()) cfg.meta.host = options.host;
  cfg.ckpt.store = !options.ckpt_store.empty() ? options.ckpt_store
                   : options.host.empty()      ? cfg.ckpt.job
                                               : ckpt::store_for_host(cfg.ckpt.job, options.host);
  if (auto ok = ckpt::check_job_name(cfg.ckpt.store); !ok) throw bad("ckpt_store: " + ok.error().message);
  cfg.ckpt.store_by_lineage = options.job.empty() && options.ckpt_store.empty();
  cfg.ckpt.replicas = options.ckpt_replicas;
  if (options.ckpt_replicate_duty < 1 || options.ckpt_replicate_duty > 100) {
    throw bad("ckpt_replicate_duty must be 1 to 100 (percent)");
  }
  cfg.ckpt.replicate_duty_percent = options.ckpt_replicate_duty;
  cfg.ckpt.persist_dir = options.ckpt_dir;
  cfg.key_file = options.key_file;
  if (cfg.key_file.empty()) {
    if (const char* env = std::getenv("SHOAL_KEY_FILE"); env != nullptr && *env != '\0') cfg.key_file = env;
  }
  if (cfg.key_file.empty() && !options.insecure) {
    throw bad("no cluster key: set key_file (`shoal keygen --output PATH`, the same file on every host) or "
              "SHOAL_KEY_FILE, or insecure = true to run a cluster that any host reaching " + options.bind +
              " can join");
  }
  if (!cfg.key_file.empty() && options.insecure) throw bad("insecure and a cluster key exclude each other");
  if (options.evict_stragglers) {
    if (cfg.key_file.empty()) {
      throw bad("evict_stragglers needs a cluster key: eviction acts only on timing figures sealed with it, and "
                "with insecure anyone who reaches the trainers' connections could evict a healthy host");
    }
    const auto positive = [](std::chrono::milliseconds d) { return d.count() > 0 && d <= std::chrono::hours(24 * 365); };
    if (!positive(options.evict_after) || !positive(options.evict_window) || !positive(options.evict_hold_down)) {
      throw bad("evict_after, evict_window and evict_hold_down must be positive (and at most a year)");
    }
    auto& ev = cfg.membership.eviction;
    ev.enabled = true;
    ev.after = std::chrono::duration_cast<gossip::Time>(options.evict_after);
    ev.window = std::chrono::duration_cast<gossip::Time>(options.evict_window);
    ev.hold_down = std::chrono::duration_cast<gossip::Time>(options.evict_hold_down);
  }
  if (options.backend != "gloo" && options.backend != "nccl") {
    throw bad("backend must be gloo or nccl, not '" + options.backend + "'");
  }

  auto session = std::make_unique<session::EmbeddedSession>(std::move(cfg), options);
  if (auto started = session->begin(); !started) throw bad(started.error().message);
  return session;
}

std::unique_ptr<Session> Session::connect(const SessionOptions& given) {
  SessionOptions options = given;
  setup_logging(options);
  ignore_sigpipe_unless_handled();
  if (options.control_path.empty()) {
    // A worker that `shoal agent --workers connect -- COMMAND` started: the agent says where it is.
    const char* control = std::getenv("SHOAL_CONTROL");
    const char* slot = std::getenv("SHOAL_SLOT");
    if (control == nullptr || *control == '\0') {
      throw bad("connect needs the agent's control socket (control_path, or SHOAL_CONTROL in the environment)");
    }
    options.control_path = control;
    if (slot != nullptr) {
      char* end = nullptr;
      const unsigned long v = std::strtoul(slot, &end, 10);
      if (*slot == '\0' || *end != '\0' || v > 1024) throw bad(std::string("SHOAL_SLOT is not a slot: '") + slot + "'");
      options.slot = static_cast<uint32_t>(v);
    }
  }
  if (options.backend != "gloo" && options.backend != "nccl") {
    throw bad("backend must be gloo or nccl, not '" + options.backend + "'");
  }
  auto session = std::make_unique<session::ConnectedSession>(options);
  if (auto started = session->begin(); !started) throw bad(started.error().message);
  return session;
}

}  // namespace shoal
