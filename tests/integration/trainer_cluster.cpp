// The trainer fixture: start, read, kill, reap.
#include "trainer_cluster.hpp"

#include <algorithm>

#include <doctest/doctest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

using namespace std::chrono_literals;

namespace shoal::test {

namespace {

// Tests run on loopback with an open cluster unless they give a key, and say so.
void insecure_unless_keyed(std::vector<std::string>& argv, const std::vector<std::string>& extra) {
  if (std::find(extra.begin(), extra.end(), "--key-file") == extra.end()) argv.push_back("--insecure");
}

}  // namespace

Trainer& TrainerCluster::launch(const std::string& name, std::vector<std::string> argv) {
  Trainer t;
  t.name = name;
  t.process = std::make_unique<ChildProcess>(argv, dir_.path() + "/" + name + ".log");
  const auto line = t.process->read_line(10s);
  REQUIRE_MESSAGE(line, name << " printed no start line; its log:\n" << log(name));
  const auto doc = nlohmann::json::parse(*line, nullptr, false);
  REQUIRE(doc.is_object());
  t.addr = doc.value("addr", "");
  REQUIRE(!t.addr.empty());
  auto& slot = trainers_[name];
  slot = std::move(t);
  return slot;
}

Trainer& TrainerCluster::start(const std::string& name, const std::string& seed, int steps,
                              std::vector<std::string> extra) {
  std::vector<std::string> argv = {TRAINER_BINARY, "--name", name, "--bind", "127.0.0.1:0", "--steps",
                                   std::to_string(steps), "--step-ms", "40", "--cluster", "trainer-test"};
  if (!seed.empty()) {
    argv.push_back("--seeds");
    argv.push_back(seed);
  }
  insecure_unless_keyed(argv, extra);  // before the extra flags: they may end with `-- COMMAND`
  argv.insert(argv.end(), extra.begin(), extra.end());
  return launch(name, argv);
}

Trainer& TrainerCluster::start_connected(const std::string& name, const std::string& agent, int slot, int steps,
                                         std::vector<std::string> extra) {
  std::vector<std::string> argv = {TRAINER_BINARY, "--control", dir_.path() + "/" + agent + ".sock", "--slot",
                                   std::to_string(slot), "--steps", std::to_string(steps), "--step-ms", "40"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return launch(name, argv);
}

std::string TrainerCluster::start_agent(const std::string& name, const std::string& seed, int slots,
                                        const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {SHOAL_BINARY, "agent", "--name", name, "--bind", "127.0.0.1:0", "--slots",
                                   std::to_string(slots), "--cluster", "trainer-test", "--control",
                                   dir_.path() + "/" + name + ".sock"};
  if (!seed.empty()) {
    argv.push_back("--seeds");
    argv.push_back(seed);
  }
  insecure_unless_keyed(argv, extra);  // before the extra flags: they may end with `-- COMMAND`
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto p = std::make_unique<ChildProcess>(argv, dir_.path() + "/" + name + ".log");
  const auto line = p->read_line(10s);
  REQUIRE_MESSAGE(line, "agent " << name << " printed no listening line");
  // "shoal agent NAME listening on IP:PORT control PATH"
  const auto at = line->find("listening on ");
  REQUIRE(at != std::string::npos);
  const auto rest = line->substr(at + 13);
  agents_[name] = std::move(p);
  return rest.substr(0, rest.find(' '));
}

void TrainerCluster::kill_agent(const std::string& name) { agents_.at(name)->kill_and_reap(); }

void TrainerCluster::pump(std::chrono::milliseconds ms) {
  const auto until = std::chrono::steady_clock::now() + ms;
  do {
    for (auto& [name, t] : trainers_) {
      if (!t.process || t.exit_code) continue;
      while (auto line = t.process->read_line(5ms)) {
        const auto doc = nlohmann::json::parse(*line, nullptr, false);
        if (!doc.is_object() || !doc.contains("step")) continue;
        StepRecord r;
        r.t = doc.value("t", 0.0);
        r.step = doc.value("step", uint64_t{0});
        r.epoch = doc.value("epoch", uint64_t{0});
        r.world = doc.value("world", 0);
        r.rank = doc.value("rank", -1);
        r.ok = doc.value("ok", false);
        r.rebuilt = doc.contains("rebuild_ms");
        r.attempt = doc.value("attempt", uint32_t{0});
        if (doc.contains("restored_step")) {
          r.restored_step = doc["restored_step"].get<uint64_t>();
          r.restore_source = doc.value("restore_source", "");
          r.state_ok = doc.value("state_ok", false);
        }
        if (doc.contains("synced_step")) {
          r.synced_step = doc["synced_step"].get<uint64_t>();
          r.synced_from = doc.value("synced_from", -1);
          r.state_ok = doc.value("state_ok", false);
        }
        r.saved = doc.contains("saved");
        if (doc.contains("stragglers") && doc["stragglers"].is_array()) {
          r.has_stragglers = true;
          for (const auto& n : doc["stragglers"]) {
            if (n.is_string()) r.stragglers.push_back(n.get<std::string>());
          }
        }
        t.steps.push_back(r);
      }
    }
  } while (std::chrono::steady_clock::now() < until);
}

bool TrainerCluster::until(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    pump(50ms);
  }
  return cond();
}

void TrainerCluster::finish(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    pump(50ms);
    bool all = true;
    for (auto& [name, t] : trainers_) {
      if (!t.process || t.exit_code) continue;
      t.exit_code = t.process->wait_exit(0ms);
      if (!t.exit_code) all = false;
    }
    if (all) return;
  }
}

std::string TrainerCluster::log(const std::string& name) const {
  return run_command({"/usr/bin/tail", "-n", "25", dir_.path() + "/" + name + ".log"}).out;
}

// After a kill: every survivor exits 0, every step ok, a world of world_after after the kill, one rebuild
// that came within a few seconds, and the same epoch and world at each step number.
void check_survivors(TrainerCluster& c, const std::vector<std::string>& survivors, double kill_t, int steps,
                     int world_after) {
  for (const auto& n : survivors) {
    auto& t = c[n];
    INFO(n << " log:\n" << c.log(n));
    CHECK(t.exit_code == std::optional<int>(0));
    REQUIRE(!t.steps.empty());
    CHECK(t.steps.back().step == static_cast<uint64_t>(steps - 1));
    for (const auto& s : t.steps) CHECK_MESSAGE(s.ok, n << " step " << s.step << " failed its check");
    const StepRecord* first_after = nullptr;
    for (const auto& s : t.steps) {
      if (s.t > kill_t && s.world == world_after) {
        first_after = &s;
        break;
      }
    }
    REQUIRE_MESSAGE(first_after, n << " never trained in a world of " << world_after);
    CHECK(first_after->rebuilt);
    // A generous behaviour bound (detection + view + rebuild); the benchmark reports the real figure.
    CHECK(first_after->t - kill_t < 10.0);
  }
}

bool reached_world(const Trainer& t, int world) { return !t.steps.empty() && t.steps.back().world == world; }

}  // namespace shoal::test
