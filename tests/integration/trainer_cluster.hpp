// Test support: example trainers (build/examples/allreduce_trainer) as real processes on loopback,
// with their per-step JSON lines collected, and `shoal agent` processes for trainers that connect to
// one. Everything started is killed and reaped at the end of the test.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../support/process.hpp"

namespace shoal::test {

struct StepRecord {
  double t = 0;
  uint64_t step = 0;
  uint64_t epoch = 0;
  int world = 0;
  int rank = -1;
  bool ok = false;
  bool rebuilt = false;
  uint32_t attempt = 0;  // rebuilds for the same view (after --abort-at)
  // With --ckpt-every: the first step after a restore says what was restored, from where, and whether the
  // state matched what that step must have produced.
  std::optional<uint64_t> restored_step;
  std::string restore_source;
  bool state_ok = false;
  // After a join or a same-view rebuild: the live state came from rank synced_from, at synced_step.
  std::optional<uint64_t> synced_step;
  int synced_from = -1;
  bool saved = false;
  // The hosts the straggler verdict names (has_stragglers: the line carried the field at all).
  std::vector<std::string> stragglers;
  bool has_stragglers = false;
};

struct Trainer {
  std::string name;
  std::string addr;
  std::unique_ptr<ChildProcess> process;
  std::vector<StepRecord> steps;
  std::optional<int> exit_code;
};

class TrainerCluster {
 public:
  // An embedded trainer named `name`, joining through `seed` (empty: a new cluster).
  Trainer& start(const std::string& name, const std::string& seed, int steps, std::vector<std::string> extra = {});
  // A trainer that follows the agent `agent` (started with start_agent) as its slot `slot`.
  Trainer& start_connected(const std::string& name, const std::string& agent, int slot, int steps,
                           std::vector<std::string> extra = {});
  // A `shoal agent` with `slots` slots; returns its address.
  std::string start_agent(const std::string& name, const std::string& seed, int slots,
                          const std::vector<std::string>& extra = {});
  void kill_agent(const std::string& name);
  std::string socket_of(const std::string& agent) const { return dir_.path() + "/" + agent + ".sock"; }

  Trainer& operator[](const std::string& name) { return trainers_.at(name); }

  // Reads whatever the running trainers printed during about `ms`.
  void pump(std::chrono::milliseconds ms);
  // Pumps until `cond` holds or `timeout` passes.
  bool until(const std::function<bool()>& cond, std::chrono::milliseconds timeout);
  // Waits for every running trainer to exit, reading its output meanwhile.
  void finish(std::chrono::milliseconds timeout);
  // The last lines of a trainer's (or agent's) stderr.
  std::string log(const std::string& name) const;

 private:
  Trainer& launch(const std::string& name, std::vector<std::string> argv);

  TempDir dir_;
  std::map<std::string, Trainer> trainers_;
  std::map<std::string, std::unique_ptr<ChildProcess>> agents_;
};

bool reached_world(const Trainer& t, int world);
// After a kill at `kill_t` (wall-clock seconds): every survivor exits 0 after `steps` steps, every step's
// check is ok, and each trained in a world of `world_after` after the kill, its first such step a rebuild
// that came within a generous bound (the benchmark reports the real figure).
void check_survivors(TrainerCluster& c, const std::vector<std::string>& survivors, double kill_t, int steps,
                     int world_after);

}  // namespace shoal::test
