// allreduce_trainer: data-parallel synthetic training on shoal's Gloo communicator, with the agent
// embedded. Every step each rank makes a gradient that is a known function of (rank, step), allreduces
// it, and checks the sum against the value it must have, so a wrong world or a stale peer shows up as
// "ok": false instead of being averaged in. Every step also checks that all ranks hold the same
// parameters (an allreduce of a parameter hash: min == max), which is what the state sync promises.
//
// The update is the average gradient divided by what the average must be, so the parameters after step s
// are a pure function of s whatever the world sizes were: a restored state can be checked exactly.
//
// With --ckpt-every K the trainer saves its parameters to shoal's in-memory checkpoints every K steps,
// and after a rebuild that lost a rank all ranks restore the newest step complete for all of them (from
// this host's memory or a peer's replica) and prove it: their next line carries restored_step,
// restore_source and state_ok (the restored parameters equal what that step must have produced). After a
// join or a rebuild for the same view nothing was lost: the ranks go on from the live state, handed to
// newcomers by the lowest rank that trained before (synced_step, synced_from, state_ok), and redo no step.
//
// On stdout: first {"event":"started","name":...,"addr":"ip:port"}, then one JSON object per step: t, step,
// epoch, rank, world, ok, stragglers (the hosts shoal's straggler verdict names; [] when none), and
// rebuild_ms after a rebuild; after a drain (`shoal drain`: the loop ended at a step boundary, that step saved
// with --ckpt-every) {"event":"drained","last_step":N}.
//   allreduce_trainer --name a --bind 127.0.0.1:7001 --steps 100 --step-ms 50
//   allreduce_trainer --name b --bind 127.0.0.1:7002 --seeds 127.0.0.1:7001 --steps 100 --step-ms 50
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "shoal/elastic_loop.hpp"
#include "shoal/health.hpp"
#include "shoal/session.hpp"

namespace {

constexpr size_t kParams = 4096;
constexpr float kLearningRate = 0.01f;

const char* kUsage =
    "usage: allreduce_trainer --name NAME --bind HOST:PORT [--seeds HOST:PORT,...] [--cluster ID]\n"
    "                         [--slots 1] [--min-hosts N] [--steps N] [--step-ms MS | --step-cpu-ms MS]\n"
    "                         [--log-level SPEC] [--ckpt-every K] [--job NAME] [--host NAME] [--ckpt-dir DIR]\n"
    "                         [--abort-at STEP] [--control-socket PATH] [--health-every N]\n"
    "                         [--evict-stragglers [--evict-after S] [--evict-window S] [--evict-hold-down S]]\n"
    "                         (--key-file PATH | --insecure)\n"
    "       allreduce_trainer --control PATH [--slot K] [--steps N] [--step-ms MS | --step-cpu-ms MS]\n"
    "                         [--log-level SPEC] [--ckpt-every K] [--abort-at STEP] [--health-every N]\n"
    "Synthetic data-parallel training on shoal's Gloo communicator, with the agent embedded (first form) or\n"
    "following the `shoal agent` whose control socket is PATH, as its slot K (second form). Prints one JSON\n"
    "object per step (t, step, epoch, rank, world, ok, stragglers, rebuild_ms after a rebuild). A step's\n"
    "compute sleeps --step-ms MS, or with --step-cpu-ms MS burns MS ms of the thread's own CPU time\n"
    "(CLOCK_THREAD_CPUTIME_ID), so that a CPU quota, a stopped process or a busy neighbour stretches it as it\n"
    "would a real trainer's. \"stragglers\" lists the hosts the straggler verdict names (empty when none):\n"
    "shoal's elastic loop times every step and every rank judges alike from the same figures (see\n"
    "`shoal health --help`); --health-every N sets how many steps lie between two exchanges of the\n"
    "figures (default 5, at most 8; 0: no exchange and no verdict). --evict-stragglers (embedded agent, needs\n"
    "--key-file) removes a host the verdict has named for --evict-after S seconds (default 3) from the next\n"
    "committed view, by majority, never below --min-hosts, one per --evict-window S (default 60); it stays out of\n"
    "views, waiting, until --evict-hold-down S (default 60) has passed, then rejoins. With --ckpt-every K it saves\n"
    "its state every K steps into shoal's in-memory checkpoints and restores after a rebuild that lost a rank\n"
    "(restored_step, restore_source, state_ok in the next line); after a join the ranks go on from the live\n"
    "state (synced_step, synced_from, state_ok). --job names the checkpoints (default: the cluster id);\n"
    "--host NAME makes trainers sharing one machine act as separate hosts (placement, segments); --ckpt-dir DIR\n"
    "also persists the checkpoints there and loads them back after every host restarted. Exits 0 after --steps\n"
    "steps with every check passed, 1 when a check failed, 2 on bad flags. --abort-at STEP injects a fault for\n"
    "tests: rank 0 aborts its own communicator once, before that step's allreduce, as a reset connection would;\n"
    "the ranks rebuild for the same view (\"attempt\" in the lines after). The embedded agent serves its control\n"
    "socket (shoal status, shoal health --control PATH) at --control-socket PATH (default: the agent's default\n"
    "path for NAME; none: no socket) and needs the cluster key (--key-file PATH, or SHOAL_KEY_FILE), or\n"
    "--insecure for a cluster any host may join.\n"
    "On SIGTERM the embedded agent leaves the cluster gracefully, then the trainer ends as SIGTERM asks.\n";

// Gradient element i of `rank` at `step`: small integers, so every sum is exact in float.
float gradient(int rank, uint64_t step, size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(1 + (step + i) % 7));
}

// The parameters after steps 0..last, replayed with the very float operations the training does.
std::vector<float> expected_params(uint64_t last, size_t n) {
  std::vector<float> p(n, 1.0f);
  for (uint64_t step = 0; step <= last; ++step) {
    for (size_t i = 0; i < n; ++i) p[i] -= kLearningRate * static_cast<float>(1 + (step + i) % 7);
  }
  return p;
}

uint64_t hash_params(const std::vector<float>& p) {
  uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(p.data());
  for (size_t i = 0; i < p.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Burns `ms` milliseconds of this thread's own CPU time: a quota, a stop or a busy neighbour stretches
// the wall time it takes, as it would a real step's compute.
void burn_cpu_ms(uint64_t ms) {
  const auto cpu_ns = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  const uint64_t until = cpu_ns() + ms * 1'000'000ull;
  volatile uint64_t sink = 0;
  while (cpu_ns() < until) {
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<uint64_t>(i) * 2654435761u;
  }
}

// A JSON array of strings (host names: printable, quoted as JSON wants).
std::string json_names(const std::vector<std::string>& names) {
  std::string out = "[";
  for (const auto& n : names) {
    out += out.size() > 1 ? ",\"" : "\"";
    for (const char c : n) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    out += '"';
  }
  return out + "]";
}

std::optional<uint64_t> parse_count(const std::string& s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || s[0] == '-') return std::nullopt;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--insecure" || arg == "--evict-stragglers") {  // the flags without a value
      flags[arg.substr(2)] = "1";
      continue;
    }
    static const char* known[] = {"--name",      "--bind",       "--seeds",       "--cluster",        "--slots",
                                  "--min-hosts", "--steps",      "--step-ms",     "--log-level",      "--control",
                                  "--slot",      "--ckpt-every", "--job",         "--host",           "--ckpt-dir",
                                  "--abort-at",  "--key-file",   "--step-cpu-ms", "--control-socket", "--health-every",
                                  "--evict-after", "--evict-window", "--evict-hold-down"};
    bool ok = false;
    for (const char* k : known) ok = ok || arg == k;
    if (!ok || i + 1 >= argc) {
      std::cerr << "allreduce_trainer: " << (ok ? "missing value for " : "unknown flag ") << arg << "\n" << kUsage;
      return 2;
    }
    flags[arg.substr(2)] = argv[++i];
  }
  const auto count_flag = [&](const char* name, uint64_t def) -> std::optional<uint64_t> {
    auto it = flags.find(name);
    if (it == flags.end()) return def;
    return parse_count(it->second);
  };
  const auto steps = count_flag("steps", 100);
  const auto step_ms = count_flag("step-ms", 0);
  const auto step_cpu_ms = count_flag("step-cpu-ms", 0);
  const auto health_every = count_flag("health-every", shoal::StragglerOptions{}.exchange_every);
  const auto min_hosts = count_flag("min-hosts", 1);
  const auto slots = count_flag("slots", 1);
  const auto slot = count_flag("slot", 0);
  const auto ckpt_every = count_flag("ckpt-every", 0);
  const auto abort_at = count_flag("abort-at", UINT64_MAX);
  if (!steps || !step_ms || !step_cpu_ms || !health_every || !min_hosts || !slots || !slot || !ckpt_every ||
      !abort_at || *min_hosts < 1 || *health_every > 8) {
    std::cerr << "allreduce_trainer: --steps, --step-ms, --step-cpu-ms, --health-every, --slots, --slot, --ckpt-every, "
                 "--abort-at and --min-hosts take non-negative integers (--min-hosts at least 1, --health-every at "
                 "most 8)\n";
    return 2;
  }
  const bool connect = flags.contains("control");
  if (connect && flags.contains("control-socket")) {
    std::cerr << "allreduce_trainer: --control-socket is for the embedded agent, not with --control\n";
    return 2;
  }
  if (!connect && (!flags.contains("name") || !flags.contains("bind"))) {
    std::cerr << "allreduce_trainer: --name and --bind are required (or --control PATH)\n" << kUsage;
    return 2;
  }

  shoal::SessionOptions opt;
  opt.name = flags["name"];
  opt.bind = flags["bind"];
  opt.seeds = split(flags["seeds"], ',');
  opt.cluster = flags["cluster"];
  opt.slots = static_cast<uint32_t>(*slots);
  opt.min_hosts = static_cast<uint32_t>(*min_hosts);
  opt.log_spec = flags.contains("log-level") ? flags["log-level"] : "warn";
  opt.control_path = connect ? flags["control"] : flags["control-socket"];
  opt.slot = static_cast<uint32_t>(*slot);
  opt.job = flags["job"];
  opt.host = flags["host"];
  opt.ckpt_dir = flags["ckpt-dir"];
  opt.key_file = flags["key-file"];
  opt.insecure = flags.contains("insecure");
  opt.evict_stragglers = flags.contains("evict-stragglers");
  for (const auto& [flag, target] : {std::pair{"evict-after", &opt.evict_after}, std::pair{"evict-window", &opt.evict_window},
                                     std::pair{"evict-hold-down", &opt.evict_hold_down}}) {
    const auto it = flags.find(flag);
    if (it == flags.end()) continue;
    char* end = nullptr;
    const double s = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0' || !(s > 0) || s > 86400.0 * 365) {
      std::cerr << "allreduce_trainer: --" << flag << " takes a positive number of seconds\n";
      return 2;
    }
    if (!opt.evict_stragglers) {
      std::cerr << "allreduce_trainer: --" << flag << " needs --evict-stragglers\n";
      return 2;
    }
    *target = std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
  }
  // SIGTERM (scancel, systemctl stop): leave the cluster gracefully first, so the others commit a view
  // without this host at once instead of detecting a death.
  opt.leave_on_sigterm = true;

  std::unique_ptr<shoal::Session> session;
  try {
    session = connect ? shoal::Session::connect(opt) : shoal::Session::start(opt);
  } catch (const shoal::Error& e) {
    std::cerr << "allreduce_trainer: " << e.what() << "\n";
    return 2;
  }

  // The first line says where this member listens, for scripts that seed others through it.
  std::printf("{\"event\":\"started\",\"name\":\"%s\",\"addr\":\"%s\"}\n", connect ? "" : opt.name.c_str(),
              session->address().c_str());
  std::fflush(stdout);

  std::vector<float> params(kParams, 1.0f);
  std::vector<float> grad(kParams);
  bool all_ok = true;
  bool step_ok = true;
  std::optional<double> rebuild_ms;

  shoal::ElasticHooks hooks;
  bool injected = false;
  shoal::Communicator* stepped_on = nullptr;  // the communicator of the last step, to checkpoint as its rank
  hooks.step = [&](shoal::Communicator& comm, uint64_t step) {
    stepped_on = &comm;
    if (*step_cpu_ms > 0) {
      burn_cpu_ms(*step_cpu_ms);  // the "compute", in CPU time
    } else if (*step_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(*step_ms));  // the "compute"
    }
    if (step == *abort_at && comm.rank() == 0 && !injected) {
      injected = true;
      comm.abort("--abort-at " + std::to_string(step) + ": a fault injected for tests");
    }
    const int world = comm.world_size();
    for (size_t i = 0; i < kParams; ++i) grad[i] = gradient(comm.rank(), step, i);
    comm.allreduce(std::span<float>(grad), shoal::ReduceOp::sum);
    step_ok = true;
    const int rank_sum = world * (world + 1) / 2;
    for (size_t i = 0; i < kParams; ++i) {
      if (grad[i] != static_cast<float>(rank_sum * static_cast<int>(1 + (step + i) % 7))) step_ok = false;
    }
    // grad / rank_sum is exactly (1 + (step + i) % 7): small integers divide exactly in float.
    for (size_t i = 0; i < kParams; ++i) params[i] -= kLearningRate * (grad[i] / static_cast<float>(rank_sum));
    // Every rank must now hold the same parameters: min and max of their hashes agree.
    int64_t h[2] = {static_cast<int64_t>(hash_params(params) >> 1), 0};
    h[1] = h[0];
    comm.allreduce(std::span<int64_t>(&h[0], 1), shoal::ReduceOp::min);
    comm.allreduce(std::span<int64_t>(&h[1], 1), shoal::ReduceOp::max);
    if (h[0] != h[1]) step_ok = false;
  };
  hooks.save = [&] {
    std::vector<std::byte> out(params.size() * sizeof(float));
    std::memcpy(out.data(), params.data(), out.size());
    return out;
  };
  hooks.load = [&](const std::vector<std::byte>& state) {
    if (state.size() == params.size() * sizeof(float)) std::memcpy(params.data(), state.data(), state.size());
  };
  struct Restored {
    uint64_t step;
    std::string source;
    double ms;
    bool state_ok;
  };
  std::optional<Restored> restored;
  if (*ckpt_every > 0) {
    hooks.restore = [&](shoal::Communicator& comm) -> std::optional<uint64_t> {
      auto r = session->restore(comm);
      if (!r) return std::nullopt;
      const auto bytes = r->buffer("params");
      bool ok = bytes.size() == params.size() * sizeof(float);
      if (ok) std::memcpy(params.data(), bytes.data(), bytes.size());
      const auto expect = expected_params(r->step, params.size());
      ok = ok && std::memcmp(params.data(), expect.data(), bytes.size()) == 0;
      restored = Restored{r->step, r->source, r->seconds * 1000.0, ok};
      return r->step;
    };
  }
  // A join or a rebuild for the same view keeps the live state (no rollback): every rank, the newcomer
  // included, proves what it now holds is what the step must have produced.
  struct Synced {
    uint64_t step;
    int from;
    bool state_ok;
  };
  std::optional<Synced> synced;
  hooks.synced = [&](uint64_t next_step, int from) {
    if (next_step == 0) return;
    const auto expect = expected_params(next_step - 1, params.size());
    synced = Synced{next_step - 1, from, std::memcmp(params.data(), expect.data(), params.size() * sizeof(float)) == 0};
  };
  shoal::RankInfo ranks;
  const shoal::ElasticLoop* loop_of_hooks = nullptr;  // set once the loop exists, before run()
  hooks.rebuilt = [&](const shoal::RankInfo& r, double ms) {
    ranks = r;
    if (ms > 0) rebuild_ms = ms;
  };
  hooks.completed = [&](uint64_t step) {
    all_ok = all_ok && step_ok;
    char line[512];
    int n = std::snprintf(line, sizeof(line),
                          "{\"t\":%.6f,\"step\":%" PRIu64 ",\"epoch\":%" PRIu64 ",\"rank\":%d,\"world\":%d,\"ok\":%s",
                          now_s(), step, ranks.epoch, ranks.rank, ranks.world_size, step_ok ? "true" : "false");
    if (rebuild_ms) n += std::snprintf(line + n, sizeof(line) - static_cast<size_t>(n), ",\"rebuild_ms\":%.1f", *rebuild_ms);
    if (ranks.attempt > 0) n += std::snprintf(line + n, sizeof(line) - static_cast<size_t>(n), ",\"attempt\":%u", ranks.attempt);
    rebuild_ms.reset();
    if (restored) {
      all_ok = all_ok && restored->state_ok;
      n += std::snprintf(line + n, sizeof(line) - static_cast<size_t>(n),
                         ",\"restored_step\":%" PRIu64 ",\"restore_source\":\"%s\",\"restore_ms\":%.1f,\"state_ok\":%s",
                         restored->step, restored->source.c_str(), restored->ms, restored->state_ok ? "true" : "false");
      restored.reset();
    }
    if (synced) {
      all_ok = all_ok && synced->state_ok;
      n += std::snprintf(line + n, sizeof(line) - static_cast<size_t>(n),
                         ",\"synced_step\":%" PRIu64 ",\"synced_from\":%d,\"state_ok\":%s", synced->step, synced->from,
                         synced->state_ok ? "true" : "false");
      synced.reset();
    }
    if (*ckpt_every > 0 && (step + 1) % *ckpt_every == 0) {
      auto save = session->begin_save(*stepped_on, step, {{"params", params.size() * sizeof(float)}});
      save->write("params", std::as_bytes(std::span<const float>(params)));
      save->commit();
      n += std::snprintf(line + n, sizeof(line) - static_cast<size_t>(n), ",\"saved\":true");
    }
    // Last, and outside the fixed-size buffer: the list grows with the hosts named.
    const auto named = loop_of_hooks ? loop_of_hooks->health().stragglers : std::vector<std::string>{};
    std::printf("%s,\"stragglers\":%s}\n", line, json_names(named).c_str());
    std::fflush(stdout);
  };

  if (*ckpt_every > 0) {
    // A drain (`shoal drain`): every rank saves the step it stopped at, unless `completed` just did.
    hooks.drain_save = [&](shoal::Communicator& comm, uint64_t step) {
      if ((step + 1) % *ckpt_every == 0) return;
      auto save = session->begin_save(comm, step, {{"params", params.size() * sizeof(float)}});
      save->write("params", std::as_bytes(std::span<const float>(params)));
      save->commit();
    };
  }

  try {
    shoal::StragglerOptions health;
    health.exchange_every = static_cast<uint32_t>(*health_every);
    shoal::ElasticLoop loop(*session, hooks, health);
    loop_of_hooks = &loop;
    loop.run(*steps);
    if (loop.drained()) {
      std::printf("{\"t\":%.6f,\"event\":\"drained\",\"last_step\":%" PRIu64 "}\n", now_s(), loop.next_step() - 1);
      std::fflush(stdout);
    }
  } catch (const shoal::Error& e) {
    std::cerr << "allreduce_trainer: " << e.what() << "\n";
    session->leave();
    return 1;
  }
  session->leave();
  return all_ok ? 0 : 1;
}
