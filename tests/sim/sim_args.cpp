// Flags of shoal-sim, their defaults and the help text.
#include "sim_args.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <functional>
#include <memory>

namespace shoal::sim {
namespace {

struct RawFlags {
  bool fresh_quorum = false;
  std::string scenario;
  std::optional<int64_t> n, members, seed, runs, repeat, tracked, seeds, rack, joiners;
  std::optional<std::string> quorum_policy, coalesce_ms, loss, virtual_s, delay_ms, jitter_ms, stall_share,
      stall_pause_s, stall_every_s, update, revival, kill_every_s, join_every_ms, join_window_ms;
};

// An optional integer flag in [min_value, max_value]; the value is kept only when the flag is given.
void add_int(CLI::App& app, const std::string& name, const std::string& help, std::optional<int64_t>& target,
             int64_t min_value, int64_t max_value) {
  app.add_option_function<int64_t>(
         "--" + name, [&target](const int64_t& v) { target = v; }, help)
      ->type_name("N")
      ->check(CLI::Range(min_value, max_value));
}

void add_text(CLI::App& app, const std::string& name, const std::string& value_name, const std::string& help,
              std::optional<std::string>& target) {
  app.add_option_function<std::string>(
         "--" + name, [&target](const std::string& v) { target = v; }, help)
      ->type_name(value_name);
}

std::unique_ptr<CLI::App> make_app(RawFlags& f) {
  std::string summary =
      "Runs the gossip core in a deterministic simulation and prints one JSON object per line with the\n"
      "scenario, its inputs and its figures. Every line carries scenario, n, seed, runs, virtual_s (virtual\n"
      "seconds simulated, all runs together), wall_s, peak_rss_bytes (the process's peak resident memory),\n"
      "trace_hash (the same seed gives the same hash);\n"
      "a line with \"error\" (an invariant violation, or no convergence) exits 1.\n\n"
      "Each run starts every member at once (join: within one second; speed: warm, each handed the roster\n"
      "of all) and waits until all know all;\n"
      "then the measured phase begins, with --loss applied to datagrams. Datagrams are the cores' wire\n"
      "bytes. Stream requests (push-pull, TCP probes) are not lost: a lost segment costs its TCP\n"
      "retransmission timeout (1 s for the handshake, 200 ms for data, doubling); they never cross a\n"
      "partition, and a request to a crashed member is refused after one round trip. Invariants are\n"
      "checked after every event.\n\nscenarios:\n";
  for (const Scenario& s : scenarios()) {
    std::string left = std::string("  ") + s.name;
    left.resize(14, ' ');
    summary += left + s.summary + "\n";
  }
  summary +=
      "\nfigures: crash: detect_first_p50_ms detect_first_p99_ms dead_all_p50_ms dead_all_p99_ms; loss and stall:\n"
      "false_removals (stall also removals_of_paused); spread: spread_999_ms; load: bytes_in_per_s_mean\n"
      "bytes_out_per_s_mean (datagram and stream payload bytes); join: join_all_ms; view-crash and view-leave:\n"
      "view_all_p50_ms view_all_p99_ms; view-rack: views_committed view_all_ms; view-joins: views_committed\n"
      "join_all_ms; view-safety: divergences "
      "minority_commits unconverged (any nonzero\n"
      "exits 1; with --quorum-policy any: 2-member splits, diverged_runs); bootstrap: bootstrap_ms\n"
      "max_distinct_views; speed: run_wall_s us_per_datagram (and setup_wall_s for the warm start).\n\n"
      "Unless GLIBC_TUNABLES is set, shoal-sim runs itself again with glibc's tunables for transparent huge\n"
      "pages (the tables of thousands of members fill gigabytes); the run and its trace are the same.";
  auto app = std::make_unique<CLI::App>(summary, "shoal-sim");
  app->get_formatter()->column_width(30);
  app->add_option("scenario", f.scenario, "the scenario to run (see above)")->type_name("SCENARIO");
  add_int(*app, "n", "members (default 64; bootstrap 2000; speed 10000; view-safety 3..9 drawn per seed)", f.n, 1,
          65536);
  add_int(*app, "members", "the same as --n", f.members, 1, 65536);
  add_int(*app, "seeds", "view-safety: property runs with seeds S..S+K-1 (default 1000; soak: 10000)", f.seeds, 1,
          100000000);
  app->add_flag("--fresh-quorum", f.fresh_quorum,
                "view-safety: let --min-hosts members that know no view be up at once (a cut-off group of them "
                "bootstraps a second epoch 1: the known hazard)");
  add_text(*app, "coalesce-ms", "MS",
           "view scenarios: hand gossip changes to each keeper at most every MS (default 0: after every batch, as "
           "the agent does; bootstrap at 2000: ~2 min of wall time)",
           f.coalesce_ms);
  add_text(*app, "quorum-policy", "POLICY", "view scenarios: majority (default) or any", f.quorum_policy);
  add_int(*app, "seed", "seed of run 1; run r uses S + r - 1 (default 1)", f.seed, 0, INT64_MAX);
  add_int(*app, "runs", "independent runs, figures pooled over them (default 1)", f.runs, 1, 1000000);
  add_text(*app, "loss", "FRACTION", "datagram loss on every link in the measured phase (default 0; loss: 0.1)",
           f.loss);
  add_text(*app, "virtual-s", "S",
           "measured virtual time (loss: 3600, stall: 300, load: 60, speed: 600; join: the time limit, 300)",
           f.virtual_s);
  add_text(*app, "delay-ms", "MS", "one-way delay of every link (default 0.1)", f.delay_ms);
  add_text(*app, "jitter-ms", "MS", "plus uniform jitter in [0, MS] (default 0.15)", f.jitter_ms);
  add_int(*app, "repeat", "crashes (crash) or updates (spread) per run (default 5)", f.repeat, 1, 100000);
  add_int(*app, "rack", "view-rack: members that crash at the same instant (default 32; below half of --n)", f.rack, 1,
          65536);
  add_int(*app, "joiners",
          "view-joins: members that join an agreed view, one every --join-every-ms (default 16; below "
          "half of --n)",
          f.joiners, 1, 65536);
  add_text(*app, "join-every-ms", "MS", "view-joins: the time between two joiners' starts (default 1000)",
           f.join_every_ms);
  add_text(*app, "join-window-ms", "MS",
           "view scenarios: the keepers' join window (the agent's --join-window; default 10000, from 32 members; 0: "
           "off)",
           f.join_window_ms);
  add_text(*app, "stall-share", "FRACTION", "stall: share of members paused (default 0.1)", f.stall_share);
  add_text(*app, "stall-pause-s", "S", "stall: length of each pause (default 1.5)", f.stall_pause_s);
  add_text(*app, "stall-every-s", "S", "stall: period of the pauses (default 10)", f.stall_every_s);
  add_text(*app, "kill-every-s", "S",
           "loss, stall: kill a random member this often, restart it at the same address 0.1-0.9 s later "
           "(default 0: never)",
           f.kill_every_s);
  add_text(*app, "update", "KIND", "spread: leave or join (default leave)", f.update);
  add_text(*app, "revival", "RULE",
           "never (default): a generation once shown dead never shows alive again; refutation: it may, with a "
           "higher incarnation than it died at",
           f.revival);
  add_int(*app, "tracked", "observers checked for invariants and convergence; above N members a sample (default 2048)",
          f.tracked, 1, 65536);
  return app;
}

Result<double> parse_number(const std::string& flag, const std::string& v, double min_value, double max_value) {
  double d = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(d)) {
    return fail("--" + flag + ": '" + v + "' is not a number");
  }
  if (d < min_value || d > max_value) {
    return fail("--" + flag + ": " + v + " is out of range [" + std::to_string(min_value) + ", " +
                std::to_string(max_value) + "]");
  }
  return d;
}

}  // namespace

std::string sim_help() {
  RawFlags f;
  return make_app(f)->help();
}

Result<SimCommand> parse_sim_args(std::span<const std::string> args) {
  RawFlags f;
  auto app = make_app(f);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the arguments last first
  SimCommand cmd;
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    cmd.help = true;
    return cmd;
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }
  if (f.scenario.empty()) return fail("no scenario given (see --help)");
  cmd.scenario = find_scenario(f.scenario);
  if (cmd.scenario == nullptr) return fail("unknown scenario '" + f.scenario + "' (see --help)");

  ScenarioInputs& in = cmd.inputs;
  if (f.n && f.members && *f.n != *f.members) return fail("--n and --members disagree");
  if (f.n || f.members) {
    in.n = static_cast<size_t>(f.n ? *f.n : *f.members);
    in.n_given = true;
  }
  in.fresh_quorum = f.fresh_quorum;
  if (f.seeds) in.seeds = static_cast<size_t>(*f.seeds);
  if (f.quorum_policy) {
    if (*f.quorum_policy != "majority" && *f.quorum_policy != "any") {
      return fail("--quorum-policy: '" + *f.quorum_policy + "' is not majority or any");
    }
    in.quorum_policy = *f.quorum_policy;
  }
  if (f.seed) in.seed = static_cast<uint64_t>(*f.seed);
  if (f.runs) in.runs = static_cast<size_t>(*f.runs);
  if (f.repeat) in.repeat = static_cast<size_t>(*f.repeat);
  if (f.rack) in.rack = static_cast<size_t>(*f.rack);
  if (f.joiners) in.joiners = static_cast<size_t>(*f.joiners);
  if (f.tracked) in.max_tracked = static_cast<size_t>(*f.tracked);
  if (f.update) {
    if (*f.update != "leave" && *f.update != "join") return fail("--update: '" + *f.update + "' is not leave or join");
    in.update = *f.update;
  }
  if (f.revival) {
    if (*f.revival == "never") {
      in.revival = Revival::never;
    } else if (*f.revival == "refutation") {
      in.revival = Revival::by_refutation;
    } else {
      return fail("--revival: '" + *f.revival + "' is not never or refutation");
    }
  }
  struct NumberFlag {
    const char* name;
    const std::optional<std::string>& raw;
    double min_value, max_value;
    std::function<void(double)> set;
  };
  const NumberFlag numbers[] = {
      {"loss", f.loss, 0, 1, [&](double d) { in.loss = d; }},
      {"virtual-s", f.virtual_s, 0.001, 1e7, [&](double d) { in.virtual_s = d; }},
      {"delay-ms", f.delay_ms, 0, 60000, [&](double d) { in.delay_ms = d; }},
      {"jitter-ms", f.jitter_ms, 0, 60000, [&](double d) { in.jitter_ms = d; }},
      {"stall-share", f.stall_share, 0, 1, [&](double d) { in.stall_share = d; }},
      {"stall-pause-s", f.stall_pause_s, 0.001, 1e6, [&](double d) { in.stall_pause_s = d; }},
      {"stall-every-s", f.stall_every_s, 0.001, 1e6, [&](double d) { in.stall_every_s = d; }},
      {"coalesce-ms", f.coalesce_ms, 0, 10000, [&](double d) { in.coalesce_ms = d; }},
      {"kill-every-s", f.kill_every_s, 0, 1e6, [&](double d) { in.kill_every_s = d; }},
      {"join-every-ms", f.join_every_ms, 0, 1e7, [&](double d) { in.join_every_ms = d; }},
      {"join-window-ms", f.join_window_ms, 0, 1e7, [&](double d) { in.join_window_ms = d; }},
  };
  for (const NumberFlag& nf : numbers) {
    if (!nf.raw) continue;
    auto d = parse_number(nf.name, *nf.raw, nf.min_value, nf.max_value);
    if (!d) return fail(d.error().message);
    nf.set(*d);
  }
  return cmd;
}

}  // namespace shoal::sim
