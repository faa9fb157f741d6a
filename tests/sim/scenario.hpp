// The scenarios of shoal-sim: their inputs, their one-line JSON results, and the table of names.
// Each scenario runs the real gossip core in a Cluster and reports figures over its runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster.hpp"

namespace shoal::sim {

struct ScenarioInputs {
  size_t n = 64;
  bool n_given = false;  // --n or --members was given (bootstrap and view-safety have their own defaults)
  uint64_t seed = 1;  // run r uses seed + r, so any run of a series replays alone
  size_t runs = 1;
  std::optional<double> loss;        // datagram loss in the measured phase (scenario default when unset)
  std::optional<double> virtual_s;   // length of the measured phase (scenario default when unset)
  double delay_ms = 0.1;             // one-way delay of every link
  double jitter_ms = 0.15;           // plus uniform [0, jitter]
  size_t repeat = 5;                 // crashes (crash) or updates (spread) per run
  size_t rack = 32;                  // view-rack: members crashed at the same instant
  size_t joiners = 16;               // view-joins: members that join an agreed view, one at a time
  double join_every_ms = 1000;       // view-joins: between two joiners' starts
  std::optional<double> join_window_ms;  // view scenarios: the keepers' join window (Config's default when unset)
  double stall_share = 0.1;          // stall: share of members paused
  double stall_pause_s = 1.5;        // stall: length of each pause
  double stall_every_s = 10;         // stall: period of the pauses
  // loss, stall: kill a random running member this often (its port then refuses: the refusal rule's
  // path) and restart it at the same address 0.1-0.9 s later; 0: no kills
  double kill_every_s = 0;
  std::string update = "leave";      // spread: leave | join
  size_t max_tracked = 2048;         // observers tracked for invariants and convergence (a sample beyond)
  Revival revival = Revival::never;  // may a member shown dead come back in its generation by refuting?
  std::optional<size_t> seeds;       // view-safety: property runs, seeds seed..seed+K-1 (default 1000)
  std::string quorum_policy = "majority";  // view scenarios: majority | any
  double coalesce_ms = 0;            // view scenarios: gossip changes reach each keeper at most this often (0: every batch)
  bool fresh_quorum = false;         // view-safety: allow min_hosts fresh members at once (the bootstrap hazard)
};

// One JSON object on one line, its keys in the order added.
class JsonLine {
 public:
  void number(const std::string& key, double v);  // up to 3 decimals
  void count(const std::string& key, uint64_t v);
  void text(const std::string& key, const std::string& v);
  void flag(const std::string& key, bool v);
  void null(const std::string& key);
  void append(const JsonLine& other);
  std::string str() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

struct ScenarioOutcome {
  JsonLine figures;                  // the scenario's own inputs and figures
  std::optional<std::string> error;  // an invariant violation or a failed setup: the run is invalid
  uint64_t trace_hash = 0;           // over every run, in order
  double virtual_s = 0;              // virtual time simulated, all runs together
  std::optional<size_t> n;           // the members it ran, when the scenario chose its own default
};

struct Scenario {
  const char* name;
  const char* summary;
  ScenarioOutcome (*run)(const ScenarioInputs&);
};

const std::vector<Scenario>& scenarios();
const Scenario* find_scenario(const std::string& name);

// Shared by the scenarios (scenario_common.cpp).
ClusterOptions cluster_options(const ScenarioInputs& in, size_t run);
// Starts every member at time 0 and runs until all know all; false (with outcome.error set) if not
// within the deadline or on a violation.
bool converge(Cluster& c, ScenarioOutcome& outcome, Time deadline);
// Nearest-rank percentile of a sample (0 <= p <= 100); nullopt when empty.
std::optional<double> percentile(std::vector<double> v, double p);
void add_ms(JsonLine& line, const std::string& key, std::optional<double> ms);
// Folds a finished run into the outcome: its trace hash and virtual time, and its violation if any.
void finish_run(Cluster& c, ScenarioOutcome& outcome);
Time seconds(double s);
double to_ms(Time t);

ScenarioOutcome run_crash(const ScenarioInputs& in);
ScenarioOutcome run_loss(const ScenarioInputs& in);
ScenarioOutcome run_stall(const ScenarioInputs& in);
ScenarioOutcome run_spread(const ScenarioInputs& in);
ScenarioOutcome run_load(const ScenarioInputs& in);
ScenarioOutcome run_join(const ScenarioInputs& in);
ScenarioOutcome run_speed(const ScenarioInputs& in);  // scenario_speed.cpp
// Committed views (scenario_views.cpp).
ScenarioOutcome run_view_crash(const ScenarioInputs& in);
ScenarioOutcome run_view_rack(const ScenarioInputs& in);
ScenarioOutcome run_view_joins(const ScenarioInputs& in);
ScenarioOutcome run_view_leave(const ScenarioInputs& in);
ScenarioOutcome run_view_safety(const ScenarioInputs& in);
ScenarioOutcome run_bootstrap(const ScenarioInputs& in);

}  // namespace shoal::sim
