// Node health on loopback: six example trainers (embedded agents, Gloo) that start together. One whose
// steps take 30% longer is named a straggler by every host, itself included, within 20 steps and never
// cleared while it stays slow; `shoal health` and `shoal status` show the verdict. The same six with equal
// steps never name anyone.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer_cluster.hpp"

using namespace std::chrono_literals;

namespace {

using shoal::test::StepRecord;
using shoal::test::TrainerCluster;

const std::vector<std::string> kHosts = {"h0", "h1", "h2", "h3", "h4", "h5"};
constexpr int kSteps = 50;
constexpr int kStepMs = 100;

// Starts the six (all needed for the first view, so the figures run from the first step), `slow` with
// `slow_ms` per step; each serves its control socket in the test's directory.
void start_six(TrainerCluster& c, const std::string& slow, int slow_ms) {
  std::string seed;
  for (const auto& n : kHosts) {
    const int ms = n == slow ? slow_ms : kStepMs;
    auto& t = c.start(n, seed, kSteps,
                      {"--step-ms", std::to_string(ms), "--min-hosts", "6", "--control-socket", c.socket_of(n)});
    if (seed.empty()) seed = t.addr;
  }
}

// The first step this trainer ran in the world of six.
const StepRecord* first_of_six(const shoal::test::Trainer& t) {
  const auto it = std::find_if(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return s.world == 6; });
  return it == t.steps.end() ? nullptr : &*it;
}

nlohmann::json ask(const std::string& socket, const std::string& command) {
  const auto r = shoal::test::run_command({SHOAL_BINARY, command, "--control", socket, "--json"}, 10s);
  INFO("shoal " << command << " said: " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE(doc.is_object());
  return doc;
}

}  // namespace

TEST_CASE("a host whose steps take 30% longer is named by every host within 20 steps, and by nobody else") {
  TrainerCluster c;
  start_six(c, "h3", kStepMs * 13 / 10);
  // Every host names h3 (the same figures everywhere give the same verdict).
  const auto named = [&](const std::string& n) {
    const auto& s = c[n].steps;
    return std::any_of(s.begin(), s.end(), [](const StepRecord& r) { return !r.stragglers.empty(); });
  };
  const bool all_named = c.until(
      [&] { return std::all_of(kHosts.begin(), kHosts.end(), [&](const std::string& n) { return named(n); }); }, 60s);
  REQUIRE_MESSAGE(all_named, "not every host named a straggler; h0's log:\n" << c.log("h0"));
  // While they still train: the agent's side of the verdict.
  const auto health = ask(c.socket_of("h1"), "health");
  CHECK(health["reported"] == true);
  REQUIRE(health["hosts"].size() == 6);
  for (const auto& h : health["hosts"]) {
    INFO(h.dump());
    CHECK(h.contains("compute_ms"));
    CHECK(h.contains("wait_ms"));
    CHECK(h["straggler"] == (h["name"] == "h3"));
    if (h["name"] == "h3") CHECK(h["compute_ms"].get<double>() > 1.2 * kStepMs);
  }
  CHECK(health["stragglers"] == nlohmann::json::array({"h3"}));
  const auto status = ask(c.socket_of("h4"), "status");
  CHECK(status["health"]["stragglers"] == nlohmann::json::array({"h3"}));

  c.finish(60s);
  for (const auto& n : kHosts) {
    const auto& t = c[n];
    INFO(n << " log:\n" << c.log(n));
    CHECK(t.exit_code == std::optional<int>(0));
    const StepRecord* first = first_of_six(t);
    REQUIRE(first != nullptr);
    const auto it =
        std::find_if(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return !s.stragglers.empty(); });
    REQUIRE(it != t.steps.end());
    MESSAGE(n << " named h3 at step " << it->step << ", " << it->step - first->step << " steps into the world of six");
    CHECK(it->step - first->step <= 20);
    // Once named, h3 stays named while it stays slow, and nobody else is ever named.
    for (auto s = it; s != t.steps.end(); ++s) {
      CHECK_MESSAGE(s->stragglers == std::vector<std::string>{"h3"}, n << " step " << s->step);
    }
    CHECK(std::all_of(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return s.has_stragglers; }));
  }
  CHECK(c.log("h0").find("node health: straggler(s) h3") != std::string::npos);
}

TEST_CASE("six hosts with equal steps never name a straggler") {
  TrainerCluster c;
  start_six(c, "", kStepMs);
  REQUIRE(c.until([&] { return !c["h0"].steps.empty() && c["h0"].steps.back().step >= 25; }, 60s));
  const auto health = ask(c.socket_of("h2"), "health");
  CHECK(health["reported"] == true);
  CHECK(health["hosts"].size() == 6);
  CHECK(health["stragglers"].empty());
  c.finish(60s);
  for (const auto& n : kHosts) {
    const auto& t = c[n];
    INFO(n << " log:\n" << c.log(n));
    CHECK(t.exit_code == std::optional<int>(0));
    REQUIRE(first_of_six(t) != nullptr);
    for (const auto& s : t.steps) {
      CHECK(s.has_stragglers);
      CHECK_MESSAGE(s.stragglers.empty(), n << " named someone at step " << s.step);
    }
  }
}

TEST_CASE("trainers connected to 4 `shoal agent`s hand their verdict to their agents: each names the slow host") {
  // The connected route: each trainer computes the verdict and reports it over its agent's control socket
  // (health-report); `shoal health --json` on every agent then names b, whose trainer steps 30% longer.
  TrainerCluster c;
  const std::vector<std::string> agents = {"a", "b", "c", "d"};
  std::string seed;
  for (const auto& a : agents) {
    const auto addr = c.start_agent(a, seed, 1, {"--min-hosts", "4"});
    if (seed.empty()) seed = addr;
  }
  for (const auto& a : agents) {
    c.start_connected(a + "0", a, 0, 80, {"--step-ms", std::to_string(a == "b" ? kStepMs * 13 / 10 : kStepMs)});
  }
  const auto names_b = [&](const std::string& agent) {
    const auto r = shoal::test::run_command({SHOAL_BINARY, "health", "--control", c.socket_of(agent), "--json"}, 10s);
    const auto doc = nlohmann::json::parse(r.out, nullptr, false);
    return r.exit_code == 0 && doc.is_object() && doc.value("reported", false) &&
           doc["stragglers"] == nlohmann::json::array({"b"});
  };
  const bool all_named = c.until(
      [&] { return std::all_of(agents.begin(), agents.end(), [&](const std::string& a) { return names_b(a); }); },
      40s);
  REQUIRE_MESSAGE(all_named, "not every agent was told b is a straggler; a0's log:\n" << c.log("a0"));
  const auto health = ask(c.socket_of("d"), "health");
  REQUIRE(health["hosts"].size() == 4);
  for (const auto& h : health["hosts"]) {
    INFO(h.dump());
    CHECK(h["straggler"] == (h["name"] == "b"));
  }
  CHECK(health["authenticated"] == false);  // an open (--insecure) cluster
  c.finish(60s);
  for (const auto& a : agents) CHECK(c[a + "0"].exit_code == std::optional<int>(0));
}
