// `shoal demo`: the local multi-host demo. Starts several agents on 127.0.0.1 in this process (one
// thread each, each with its own sockets, gossip and view keeper, exactly as separate hosts would run),
// waits for their first committed view, crashes one without a goodbye (like kill -9), and prints the
// timeline: detection at every survivor, the new committed view, the rejoin of a restarted host.
// The communicator rebuild is shown by scripts/demo_training.sh; the restore from a peer's replica joins with ckpt_shm.
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "base/log.hpp"
#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/flag_values.hpp"
#include "cli/key_file_writer.hpp"
#include "cli/version_text.hpp"
#include "daemon/agent.hpp"

namespace shoal::cli {
namespace {

using Clock = std::chrono::steady_clock;

// What the hosts have reported so far, shared by their threads.
class Timeline {
 public:
  explicit Timeline(Clock::time_point t0) : t0_(t0) {}

  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  void say(const std::string& line) {
    std::lock_guard lock(mu_);
    std::cout << fmt::format("[{:6.2f} s] ", seconds()) << line << std::endl;
  }
  void dead(const std::string& observer, const std::string& subject) {
    std::lock_guard lock(mu_);
    dead_seen_[subject].insert(observer);
    cv_.notify_all();
  }
  void view(const std::string& host, const membership::View& v) {
    std::lock_guard lock(mu_);
    views_[host] = {v.epoch(), v.hash(), v.size()};
    cv_.notify_all();
  }
  // Waits until `pred` holds (called under the lock) or the timeout passes.
  template <class Pred>
  bool wait(std::chrono::milliseconds timeout, Pred pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(dead_seen_, views_); });
  }

  struct Seen {
    uint64_t epoch = 0, hash = 0;
    size_t size = 0;
  };
  using DeadMap = std::map<std::string, std::set<std::string>>;
  using ViewMap = std::map<std::string, Seen>;

 private:
  Clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable cv_;
  DeadMap dead_seen_;
  ViewMap views_;
};

struct Host {
  std::unique_ptr<daemon::Agent> agent;
  std::thread thread;
};

Result<std::unique_ptr<Host>> start_host(const std::string& name, const std::vector<net::HostPort>& seeds, uint32_t n,
                                         const std::string& key_file, Timeline& tl) {
  daemon::AgentConfig cfg;
  cfg.name = name;
  cfg.bind = net::HostPort{"127.0.0.1", 0};
  cfg.seeds = seeds;
  cfg.gossip.cluster_id = "shoal-demo";
  cfg.key_file = key_file;
  cfg.meta.slots = 2;
  cfg.meta.host = name;
  cfg.membership.min_hosts = std::max<uint32_t>(2, n / 2);
  cfg.membership.hold_down = std::chrono::seconds(1);
  auto host = std::make_unique<Host>();
  host->agent = std::make_unique<daemon::Agent>(std::move(cfg));
  daemon::Agent* a = host->agent.get();
  a->add_member_observer([&tl, name](const gossip::MemberEvent& e) {
    if (e.member.state == gossip::State::dead) tl.dead(name, e.member.id.name);
  });
  a->add_view_observer([&tl, name](const membership::View& v) { tl.view(name, v); });
  if (auto st = a->start(); !st) return fail(name + ": " + st.error().message);
  host->thread = std::thread([a] { (void)a->run(); });
  return host;
}

bool all_agree(const Timeline::ViewMap& views, const std::vector<std::string>& hosts, size_t size, uint64_t* epoch) {
  std::optional<Timeline::Seen> first;
  for (const auto& h : hosts) {
    const auto it = views.find(h);
    if (it == views.end() || it->second.size != size) return false;
    if (first && (first->epoch != it->second.epoch || first->hash != it->second.hash)) return false;
    first = it->second;
  }
  if (first && epoch) *epoch = first->epoch;
  return first.has_value();
}

}  // namespace

int demo_command(std::span<const std::string> args) {
  std::optional<int64_t> hosts_flag;
  auto app =
      command_app("shoal demo", "shoal demo [--hosts N]",
                  "Run the local multi-host demo: N hosts on 127.0.0.1 (in this process, one thread and one port\n"
                  "each) form a committed view, one is crashed without a goodbye, the survivors detect it and\n"
                  "commit the next view, and the crashed host restarts and rejoins. Prints a timeline with the\n"
                  "measured durations and a summary. Exit status 0 when every step happened in time.");
  app->add_option("--hosts", hosts_flag, "how many hosts (default: 4)")->type_name("N")->check(whole_number(3, 16));
  if (auto done = parse_command(*app, args)) return *done;
  const auto n = static_cast<uint32_t>(hosts_flag.value_or(4));
  std::cout << version_text() << "\n";
  // The timeline says what happened; the agents' own logs would drown it.
  log::setup(log::parse_spec("warn").value());

  // Like a real job, the demo's hosts share a cluster key made for this run (and removed after it).
  TemporaryKeyFile key;
  if (auto failed = key.create()) {
    std::cerr << "shoal demo: cannot make a cluster key: " << *failed << "\n";
    return kExitFailure;
  }
  Timeline tl(Clock::now());
  std::vector<std::unique_ptr<Host>> hosts;
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; ++i) {
    const std::string name = "host" + std::to_string(i);
    std::vector<net::HostPort> seeds;
    if (i > 0) seeds.push_back(net::HostPort{"127.0.0.1", hosts[0]->agent->port()});
    auto h = start_host(name, seeds, n, key.path(), tl);
    if (!h) {
      std::cerr << "shoal demo: " << h.error().message << "\n";
      for (auto& x : hosts) x->agent->stop_now(), x->thread.join();
      return kExitFailure;
    }
    names.push_back(name);
    hosts.push_back(std::move(*h));
  }
  tl.say(
      fmt::format("started {} hosts on 127.0.0.1 (ports {}..), 2 GPU slots each, sharing a cluster key made for "
                  "this run",
                  n, hosts[0]->agent->port()));

  bool ok = true;
  uint64_t epoch = 0;
  const double t_start = tl.seconds();
  if (tl.wait(std::chrono::seconds(10), [&](auto&, auto& views) { return all_agree(views, names, n, &epoch); })) {
    tl.say(fmt::format("view epoch {} committed at every host: {} members, world size {} ({:.2f} s after start)", epoch,
                       n, 2 * n, tl.seconds() - t_start));
  } else {
    tl.say("no common first view within 10 s");
    ok = false;
  }

  const std::string victim = names[1];
  std::vector<std::string> survivors = names;
  std::erase(survivors, victim);
  double detect_s = 0, view_s = 0, rejoin_s = 0;
  if (ok) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    tl.say("crashing " + victim + " (sockets closed, no goodbye: like kill -9)");
    const double t_kill = tl.seconds();
    hosts[1]->agent->stop_now();
    hosts[1]->thread.join();
    ok = tl.wait(std::chrono::seconds(10), [&](auto& dead, auto&) {
      const auto it = dead.find(victim);
      return it != dead.end() && it->second.size() >= survivors.size();
    });
    detect_s = tl.seconds() - t_kill;
    tl.say(ok ? fmt::format("every survivor sees {} dead ({:.2f} s after the crash)", victim, detect_s)
              : "the survivors did not all detect the crash within 10 s");
    uint64_t e2 = 0;
    ok = ok && tl.wait(std::chrono::seconds(10),
                       [&](auto&, auto& views) { return all_agree(views, survivors, n - 1, &e2) && e2 == epoch + 1; });
    view_s = tl.seconds() - t_kill;
    tl.say(ok ? fmt::format("view epoch {} committed at every survivor: {} members, world size {} ({:.2f} s after "
                            "the crash); ranks of the survivors compacted in order",
                            e2, n - 1, 2 * (n - 1), view_s)
              : "no common next view within 10 s");
    if (ok) {
      tl.say("restarting " + victim + " (same name, new generation)");
      const double t_restart = tl.seconds();
      auto h = start_host(victim, {net::HostPort{"127.0.0.1", hosts[0]->agent->port()}}, n, key.path(), tl);
      if (h) {
        hosts[1] = std::move(*h);
        uint64_t e3 = 0;
        ok = tl.wait(std::chrono::seconds(10), [&](auto&, auto& views) { return all_agree(views, names, n, &e3); });
        rejoin_s = tl.seconds() - t_restart;
        tl.say(ok ? fmt::format("view epoch {} committed at every host: {} members again ({:.2f} s after the restart; "
                                "it joins at the end of the rank order)",
                                e3, n, rejoin_s)
                  : "the restarted host was not readmitted within 10 s");
      } else {
        tl.say("restart failed: " + h.error().message);
        ok = false;
      }
    }
  }
  // Every host leaves at once, as at the end of a job (scancel): concurrent leaves need no linger.
  for (auto& h : hosts) h->agent->stop();
  for (auto& h : hosts) {
    if (h->thread.joinable()) h->thread.join();
  }
  std::cout << "\nsummary: " << n << " hosts; crash detected at every survivor in " << fmt::format("{:.2f}", detect_s)
            << " s; new view everywhere " << fmt::format("{:.2f}", view_s)
            << " s after the crash; restarted host back in " << fmt::format("{:.2f}", rejoin_s) << " s.\n"
            << (ok ? "demo: ok\n" : "demo: FAILED (see above)\n");
  return ok ? kExitOk : kExitFailure;
}

}  // namespace shoal::cli
