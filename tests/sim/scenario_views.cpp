// Committed-view scenarios: view-crash and view-leave (time from a crash or a graceful leave until
// every survivor holds a new view without the member), view-rack (a rack's members crash at one instant:
// how many views until every survivor holds one without any of them, and when), view-joins (members join one
// at a time: how many views until every member holds all of them), view-safety (seeded property runs under
// churn) and bootstrap (N members starting within a second: time to one agreed view holding all).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>

#include "addresses.hpp"
#include "rng.hpp"
#include "scenario.hpp"
#include "view_churn.hpp"
#include "view_layer.hpp"
#include "view_safety_checker.hpp"

namespace shoal::sim {
namespace {

constexpr Time kPoll{10'000};

bool up(const Cluster& c, uint32_t m) {
  return c.status(m) == MemberStatus::running || c.status(m) == MemberStatus::paused;
}

// Times how long after a member's removal (crash or leave) every other live member has committed a
// view without that member's generation.
struct RemovalClock : ViewObserver {
  Cluster* cluster = nullptr;
  std::string victim;
  uint64_t victim_gen = 0;
  std::set<uint32_t> pending;  // survivors still holding a view with the victim
  std::optional<Time> all_at;

  void arm(uint32_t m) {
    victim = member_name(m);
    victim_gen = cluster->generation(m);
    all_at.reset();
    pending.clear();
    for (uint32_t s = 0; s < cluster->size(); ++s) {
      if (s != m && up(*cluster, s)) pending.insert(s);
    }
  }
  void on_commit(uint32_t member, uint64_t, const membership::View& v, Time now) override {
    if (victim.empty() || !pending.count(member)) return;
    const membership::ViewMember* vm = v.find(victim);
    if (vm != nullptr && vm->generation == victim_gen) return;
    pending.erase(member);
    if (pending.empty()) all_at = now;
  }
};

membership::Config view_config(const ScenarioInputs& in) {
  membership::Config cfg;
  cfg.min_hosts = static_cast<uint32_t>(in.n / 2 + 1);  // removals may shrink the job to just above half
  cfg.policy = in.quorum_policy == "any" ? membership::QuorumPolicy::any : membership::QuorumPolicy::majority;
  if (in.join_window_ms) cfg.join_window = Time(static_cast<int64_t>(*in.join_window_ms * 1000));
  return cfg;
}

// One run of a view scenario: keepers (their accepts tracked for the minority-commit check), the safety
// checker and the scenario's own `clock` observing every commit, and the cluster they run in.
struct ViewRun {
  ViewKeepers keepers;
  ViewSafetyChecker checker;
  std::unique_ptr<Cluster> cluster;

  ViewRun(const ScenarioInputs& in, size_t run, ViewObserver& clock)
      : keepers(view_config(in)), checker(keepers.config().policy) {
    keepers.track_accepts(true);
    keepers.coalesce(seconds(in.coalesce_ms / 1000.0));
    keepers.add_observer(&checker);
    keepers.add_observer(&clock);
    ClusterOptions opts = cluster_options(in, run);
    opts.layers = keepers.factory();
    cluster = std::make_unique<Cluster>(opts);
  }
  // Every live member holds the same committed view of all live members.
  bool converged() { return ViewSafetyChecker::converged(*cluster) && checker.latest().epoch() > 0; }
  // The end of a run: waits for convergence, counts what the safety checker found as the outcome's error,
  // and folds the run into the outcome.
  void finish(ScenarioOutcome& out) {
    Cluster& c = *cluster;
    if (!c.run_until(c.now() + seconds(60), kPoll, [&] { return converged(); }) && c.ok()) checker.check_converged(c);
    if (checker.divergences() + checker.minority_commits() + checker.unconverged() > 0 && !out.error) {
      out.error = "view safety: " + checker.findings().front();
    }
    finish_run(c, out);
  }
};

// What a clock measured in one run: when every member held the wanted view (or a miss), and through how
// many distinct epochs.
void record(const std::optional<Time>& all_at, Time t0, size_t epochs, std::vector<double>& all_ms,
            std::vector<double>& views, uint64_t& missed) {
  if (all_at) {
    all_ms.push_back(to_ms(*all_at - t0));
    views.push_back(static_cast<double>(epochs));
  } else {
    ++missed;
  }
}

// Removes one random member at a time (`remove` crashes it or makes it leave) and records, for each,
// the time until every survivor holds a view without it.
ScenarioOutcome run_removals(const ScenarioInputs& in, bool graceful) {
  ScenarioOutcome out;
  std::vector<double> all_ms;
  uint64_t removals = 0, missed = 0;
  const size_t per_run = std::min(in.repeat, in.n > 2 ? (in.n - 1) / 2 : size_t{0});
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    RemovalClock clock;
    ViewRun run(in, r, clock);
    Cluster& c = *run.cluster;
    ViewSafetyChecker& checker = run.checker;
    clock.cluster = &c;
    SimRng rng(derive_seed(in.seed + r, graceful ? 0x6c65617665 : 0x6372617368));
    c.start_all(Time(0));
    auto converged = [&] { return run.converged(); };
    if (!c.run_until(seconds(120), kPoll, converged) && !out.error) {
      out.error = c.ok() ? "the first view did not form within 120 virtual seconds" : *c.violation();
    }
    for (size_t k = 0; k < per_run && c.ok() && !out.error; ++k) {
      c.run_until(c.now() + seconds(2));
      std::vector<uint32_t> candidates;
      for (uint32_t m = 0; m < c.size(); ++m) {
        if (c.status(m) == MemberStatus::running) candidates.push_back(m);
      }
      const uint32_t victim = candidates[rng.below(candidates.size())];
      clock.arm(victim);
      const Time t0 = c.now();
      graceful ? c.leave(victim) : c.crash(victim);
      c.run_until(t0 + seconds(120), kPoll, [&] { return clock.all_at.has_value(); });
      ++removals;
      if (clock.all_at) {
        all_ms.push_back(to_ms(*clock.all_at - t0));
      } else {
        ++missed;
      }
      clock.victim.clear();
      // Next removal only from a settled, agreed view holding exactly the live members.
      if (!c.run_until(c.now() + seconds(60), kPoll, converged) && c.ok()) checker.check_converged(c);
    }
    if (checker.divergences() + checker.minority_commits() + checker.unconverged() > 0 && !out.error) {
      out.error = "view safety: " + checker.findings().front();
    }
    finish_run(c, out);
  }
  out.figures.count(graceful ? "leaves" : "crashes", removals);
  out.figures.count("missed", missed);
  add_ms(out.figures, "view_all_p50_ms", percentile(all_ms, 50));
  add_ms(out.figures, "view_all_p99_ms", percentile(all_ms, 99));
  add_ms(out.figures, "view_all_max_ms", percentile(all_ms, 100));
  return out;
}

// Times a rack's crash: how many distinct epochs the survivors commit until every one of them holds a
// view with none of the rack's processes, and when the last one does.
struct RackClock : ViewObserver {
  Cluster* cluster = nullptr;
  std::vector<std::pair<std::string, uint64_t>> rack;  // name, generation
  std::set<uint32_t> pending;                          // survivors still holding a view with one of them
  std::set<uint64_t> epochs;                           // committed by survivors since the crash
  std::optional<Time> all_at;
  bool armed = false;

  void on_commit(uint32_t member, uint64_t, const membership::View& v, Time now) override {
    if (!armed || all_at) return;
    epochs.insert(v.epoch());
    if (!pending.count(member)) return;
    for (const auto& [name, gen] : rack) {
      const membership::ViewMember* vm = v.find(name);
      if (vm != nullptr && vm->generation == gen) return;
    }
    pending.erase(member);
    if (pending.empty()) all_at = now;
  }
};

// Times a join storm: how many distinct epochs the members commit from the first joiner's start until
// every member (joiners too) holds a view with all the joiners, and when the last one does.
struct JoinClock : ViewObserver {
  std::vector<std::string> joiners;
  std::set<uint32_t> pending;  // members not yet holding a view with every joiner
  std::set<uint64_t> epochs;
  std::optional<Time> all_at;
  bool armed = false;

  void on_commit(uint32_t member, uint64_t, const membership::View& v, Time now) override {
    if (!armed || all_at) return;
    epochs.insert(v.epoch());
    for (const auto& name : joiners) {
      if (v.find(name) == nullptr) return;
    }
    pending.erase(member);
    if (pending.empty()) all_at = now;
  }
};

}  // namespace

ScenarioOutcome run_view_joins(const ScenarioInputs& in) {
  ScenarioOutcome out;
  if (in.joiners * 2 >= in.n) {
    out.error = "--joiners " + std::to_string(in.joiners) + " must be below half of --n " + std::to_string(in.n) +
                ": the first view needs --min-hosts (a majority of --n) without them";
    return out;
  }
  std::vector<double> all_ms, views;
  uint64_t missed = 0;
  const size_t first_n = in.n - in.joiners;
  const Time every(static_cast<int64_t>(in.join_every_ms * 1000));
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    JoinClock clock;
    ViewRun run(in, r, clock);
    Cluster& c = *run.cluster;
    for (uint32_t m = 0; m < first_n; ++m) c.start(m, Time(0));
    auto converged = [&] { return run.converged(); };
    if (!c.run_until(seconds(120), kPoll, converged)) {
      out.error = c.ok() ? "the first view did not form within 120 virtual seconds" : *c.violation();
      break;
    }
    c.run_until(c.now() + seconds(1));
    for (uint32_t m = 0; m < c.size(); ++m) clock.pending.insert(m);
    for (uint32_t m = static_cast<uint32_t>(first_n); m < c.size(); ++m) clock.joiners.push_back(member_name(m));
    clock.armed = true;
    const Time t0 = c.now();
    for (size_t k = 0; k < in.joiners; ++k) {
      c.start(static_cast<uint32_t>(first_n + k), t0 + every * static_cast<int64_t>(k));
    }
    c.run_until(t0 + every * static_cast<int64_t>(in.joiners) + seconds(120), kPoll,
                [&] { return clock.all_at.has_value(); });
    record(clock.all_at, t0, clock.epochs.size(), all_ms, views, missed);
    run.finish(out);
  }
  out.figures.count("joiners", in.joiners);
  out.figures.number("join_every_ms", in.join_every_ms);
  out.figures.number("join_window_ms", static_cast<double>(view_config(in).join_window.count()) / 1000.0);
  out.figures.count("missed", missed);
  add_ms(out.figures, "views_committed", percentile(views, 100));  // the most of any run
  add_ms(out.figures, "join_all_ms", percentile(all_ms, 100));
  return out;
}

ScenarioOutcome run_view_rack(const ScenarioInputs& in) {
  ScenarioOutcome out;
  if (in.rack * 2 >= in.n) {
    out.error = "--rack " + std::to_string(in.rack) + " must be below half of --n " + std::to_string(in.n) +
                ": the survivors must hold a majority of the view";
    return out;
  }
  std::vector<double> all_ms, views;
  uint64_t missed = 0;
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    RackClock clock;
    ViewRun run(in, r, clock);
    Cluster& c = *run.cluster;
    clock.cluster = &c;
    SimRng rng(derive_seed(in.seed + r, 0x7261636b));
    c.start_all(Time(0));
    auto converged = [&] { return run.converged(); };
    if (!c.run_until(seconds(120), kPoll, converged)) {
      out.error = c.ok() ? "the first view did not form within 120 virtual seconds" : *c.violation();
      break;
    }
    c.run_until(c.now() + seconds(2));
    // A rack: in.rack members of consecutive indices from a random start (hosts of a rack sit together).
    const uint32_t first = static_cast<uint32_t>(rng.below(c.size()));
    std::set<uint32_t> rack;
    for (size_t k = 0; k < in.rack; ++k) rack.insert(static_cast<uint32_t>((first + k) % c.size()));
    for (uint32_t m : rack) clock.rack.emplace_back(member_name(m), c.generation(m));
    for (uint32_t s = 0; s < c.size(); ++s) {
      if (!rack.count(s) && up(c, s)) clock.pending.insert(s);
    }
    clock.armed = true;
    const Time t0 = c.now();
    for (uint32_t m : rack) c.crash(m);
    c.run_until(t0 + seconds(120), kPoll, [&] { return clock.all_at.has_value(); });
    record(clock.all_at, t0, clock.epochs.size(), all_ms, views, missed);
    run.finish(out);
  }
  out.figures.count("rack", in.rack);
  out.figures.count("missed", missed);
  add_ms(out.figures, "views_committed", percentile(views, 100));  // the most of any run
  add_ms(out.figures, "view_all_ms", percentile(all_ms, 100));
  return out;
}

ScenarioOutcome run_view_crash(const ScenarioInputs& in) { return run_removals(in, false); }
ScenarioOutcome run_view_leave(const ScenarioInputs& in) { return run_removals(in, true); }

ScenarioOutcome run_view_safety(const ScenarioInputs& in) {
  ScenarioOutcome out;
  const size_t seeds = in.seeds.value_or(1000);
  if (in.quorum_policy == "any") {
    // The documented trade of `any`: a 2-member split lets each side commit a view of its own.
    uint64_t diverged_runs = 0, moved_runs = 0, formed = 0;
    for (size_t s = 0; s < seeds; ++s) {
      const PairSplitResult r = run_pair_split(membership::QuorumPolicy::any, in.seed + s);
      TraceHash h;
      h.mix(out.trace_hash);
      h.mix(r.trace_hash);
      out.trace_hash = h.value();
      out.virtual_s += r.virtual_s;
      if (!r.harness_ok && !out.error) out.error = "seed " + std::to_string(in.seed + s) + ": " + r.finding;
      formed += r.formed;
      moved_runs += r.either_moved;
      diverged_runs += r.divergences > 0;
    }
    out.figures.text("quorum_policy", "any");
    out.figures.count("members", 2);
    out.figures.count("seeds", seeds);
    out.figures.count("formed", formed);
    out.figures.count("moved_while_split", moved_runs);
    out.figures.count("diverged_runs", diverged_runs);
    out.figures.text("note", "expected: under `any` both sides of a 2|split continue and diverge");
    return out;
  }
  ViewChurnParams p;
  if (in.n_given) p.min_members = p.max_members = in.n;
  p.allow_fresh_quorum = in.fresh_quorum;
  // Replaying one seed: tell what happens, on standard error.
  if (seeds == 1) p.trace = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  uint64_t divergences = 0, minority = 0, unconverged = 0, commits = 0, faults = 0, bad_seeds = 0, killed = 0,
           forced = 0;
  std::optional<uint64_t> first_bad;
  std::string first_finding, bad_list;
  for (size_t s = 0; s < seeds; ++s) {
    const uint64_t seed = in.seed + s;
    const ViewChurnResult r = run_view_churn(p, seed);
    TraceHash h;
    h.mix(out.trace_hash);
    h.mix(r.trace_hash);
    out.trace_hash = h.value();
    out.virtual_s += r.virtual_s;
    divergences += r.divergences;
    minority += r.minority_commits;
    unconverged += r.unconverged;
    commits += r.commits;
    faults += r.faults;
    killed += r.proposer_crashes;
    forced += r.majority_lost_stalls;
    const bool bad = !r.harness_ok || r.divergences + r.minority_commits + r.unconverged > 0;
    if (bad) {
      if (bad_seeds < 20) bad_list += (bad_list.empty() ? "" : " ") + std::to_string(seed);
      ++bad_seeds;
      if (!first_bad) {
        first_bad = seed;
        first_finding = r.finding;
      }
    }
    if (!r.harness_ok && !out.error) out.error = "seed " + std::to_string(seed) + ": " + r.finding;
  }
  out.figures.text("quorum_policy", "majority");
  out.figures.count("seeds", seeds);
  out.figures.count("members_min", p.min_members);
  out.figures.count("members_max", p.max_members);
  out.figures.flag("fresh_quorum", p.allow_fresh_quorum);
  out.figures.count("commits", commits);
  out.figures.count("faults", faults);
  out.figures.count("proposer_crashes", killed);
  out.figures.count("divergences", divergences);
  out.figures.count("minority_commits", minority);
  out.figures.count("unconverged", unconverged);
  out.figures.count("majority_lost_stalls", forced);  // stalled as the rule demands, then forced together
  out.figures.count("bad_seeds", bad_seeds);
  if (first_bad) {
    out.figures.count("first_bad_seed", *first_bad);
    out.figures.text("bad_seed_list", bad_list);  // the first 20
    out.figures.text("first_finding", first_finding);
    if (!out.error) out.error = "view safety properties failed (replay: --seed " + std::to_string(*first_bad) + " --seeds 1)";
  }
  return out;
}

ScenarioOutcome run_bootstrap(const ScenarioInputs& in) {
  ScenarioOutcome out;
  const size_t n = in.n_given ? in.n : 2000;
  out.n = n;
  std::vector<double> boot_ms;
  size_t max_distinct = 0;
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    membership::Config cfg;
    cfg.min_hosts = static_cast<uint32_t>(n);
    ViewKeepers keepers(cfg);
    keepers.coalesce(seconds(in.coalesce_ms / 1000.0));
    // Per member: views committed on the way, and whether it holds one with everybody.
    struct Tally : ViewObserver {
      std::vector<uint32_t> views;
      size_t complete = 0, n = 0;
      std::optional<Time> all_at;
      std::set<uint64_t> hashes;
      void on_commit(uint32_t member, uint64_t, const membership::View& v, Time now) override {
        if (member >= views.size()) views.resize(member + 1, 0);
        ++views[member];
        hashes.insert(v.hash());
        if (v.size() == n && ++complete == n) all_at = now;
      }
    } tally;
    tally.n = n;
    tally.views.assign(n, 0);
    keepers.add_observer(&tally);
    ScenarioInputs sized = in;
    sized.n = n;
    ClusterOptions opts = cluster_options(sized, r);
    opts.layers = keepers.factory();
    Cluster c(opts);
    SimRng rng(derive_seed(in.seed + r, 0x626f6f74));
    for (uint32_t m = 0; m < n; ++m) c.start(m, Time(static_cast<int64_t>(rng.below(1'000'000))));
    const Time limit = seconds(in.virtual_s.value_or(120));
    c.run_until(limit, kPoll, [&] { return tally.all_at.has_value(); });
    if (!c.ok()) {
      if (!out.error) out.error = *c.violation();
    } else if (tally.all_at) {
      boot_ms.push_back(to_ms(*tally.all_at));
      // One agreed view: every member's last view is the same.
      if (!ViewSafetyChecker::converged(c) && !out.error) out.error = "members hold different views at the end";
    } else if (!out.error) {
      out.error = "no agreed view with all " + std::to_string(n) + " members within " +
                  std::to_string(limit.count() / 1000000) + " virtual seconds";
    }
    for (uint32_t v : tally.views) max_distinct = std::max<size_t>(max_distinct, v);
    finish_run(c, out);
  }
  out.figures.count("members", n);
  out.figures.number("coalesce_ms", in.coalesce_ms);
  add_ms(out.figures, "bootstrap_ms", percentile(boot_ms, 50));
  add_ms(out.figures, "bootstrap_max_ms", percentile(boot_ms, 100));
  out.figures.count("max_distinct_views", max_distinct);
  return out;
}

}  // namespace shoal::sim
