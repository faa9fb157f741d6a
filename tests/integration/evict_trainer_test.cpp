// Eviction by agreement on loopback: six example trainers (embedded agents, Gloo, a cluster key), all with
// --evict-stragglers; one computes 30% longer. Every host names it, the view that follows leaves it out
// (committed by the majority path), the five survivors rebuild in place and train on to their last step at
// the healthy pace, and the evicted trainer stays alive out of the view, told why in its status. Eviction
// refuses to run without a cluster key.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer_cluster.hpp"

using namespace std::chrono_literals;

namespace {

using shoal::test::StepRecord;
using shoal::test::TrainerCluster;

const std::vector<std::string> kHosts = {"h0", "h1", "h2", "h3", "h4", "h5"};
const std::vector<std::string> kSurvivors = {"h0", "h1", "h2", "h4", "h5"};
constexpr int kSteps = 110;
constexpr int kStepMs = 100;

std::string write_key(const shoal::test::TempDir& dir) {
  const std::string path = dir.path() + "/cluster.key";
  const auto r = shoal::test::run_command({SHOAL_BINARY, "keygen"});
  REQUIRE(r.exit_code == 0);
  std::ofstream(path) << r.out;
  ::chmod(path.c_str(), 0600);
  return path;
}

nlohmann::json ask(const std::string& socket, const std::string& command) {
  const auto r = shoal::test::run_command({SHOAL_BINARY, command, "--control", socket, "--json"}, 10s);
  INFO("shoal " << command << " said: " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE(doc.is_object());
  return doc;
}

// The median time between consecutive steps of `t` in a world of `world` after wall time `after`.
double median_step_s(const shoal::test::Trainer& t, int world, double after) {
  std::vector<double> gaps;
  for (size_t i = 1; i < t.steps.size(); ++i) {
    const auto& a = t.steps[i - 1];
    const auto& b = t.steps[i];
    if (a.world == world && b.world == world && a.t > after && !b.rebuilt) gaps.push_back(b.t - a.t);
  }
  if (gaps.empty()) return 0;
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return gaps[gaps.size() / 2];
}

}  // namespace

TEST_CASE("with --evict-stragglers a host 30% slower leaves the view by majority while the others train on") {
  TrainerCluster c;
  shoal::test::TempDir keys;
  const std::string key_file = write_key(keys);
  // --min-hosts 5: the job may run as five, so one host may go (the first view may also form with five,
  // the sixth joining next).
  std::string seed;
  for (const auto& n : kHosts) {
    const int ms = n == "h3" ? kStepMs * 13 / 10 : kStepMs;
    auto& t = c.start(n, seed, kSteps,
                      {"--step-ms", std::to_string(ms), "--min-hosts", "5", "--control-socket", c.socket_of(n),
                       "--key-file", key_file, "--evict-stragglers", "--evict-after", "2", "--evict-hold-down", "120",
                       "--log-level", "warn"});
    if (seed.empty()) seed = t.addr;
  }
  // Every survivor reaches a world of five (h3 gone) and trains on in it.
  const auto in_five = [&](const std::string& n) {
    const auto& s = c[n].steps;
    return std::count_if(s.begin(), s.end(), [](const StepRecord& r) { return r.world == 5; }) >= 10;
  };
  const bool evicted = c.until(
      [&] { return std::all_of(kSurvivors.begin(), kSurvivors.end(), [&](const std::string& n) { return in_five(n); }); },
      45s);
  REQUIRE_MESSAGE(evicted, "the survivors never trained as five; h0's log:\n" << c.log("h0") << "\nh3's log:\n" << c.log("h3"));

  // The committed view, as a survivor's agent holds it: h3 is out, and the view says it was evicted.
  const auto view = ask(c.socket_of("h1"), "view");
  CHECK(view["members"].size() == 5);
  for (const auto& m : view["members"]) CHECK(m["name"] != "h3");
  const auto status = ask(c.socket_of("h1"), "status");
  CHECK(status["health"]["evictions"] == 1);
  // The evicted host is alive, out of the view, and says why.
  CHECK_FALSE(c["h3"].process->wait_exit(0ms).has_value());
  {
    const auto own = ask(c.socket_of("h3"), "status");
    INFO("h3's status: " << own.dump());
    CHECK(own["view"]["in_view"] == false);
    CHECK(own["health"]["eviction"].get<std::string>().rfind("evicted: a straggler from step", 0) == 0);
    CHECK(own["view"]["reason"].get<std::string>().find("evicted as a straggler") != std::string::npos);
  }
  const auto health = ask(c.socket_of("h2"), "health");
  CHECK(health["authenticated"] == true);
  CHECK(health["dropped"]["forged"] == 0);
  // h3 would wait out its hold-down (120 s) to rejoin: end it here, the others finish without it.
  c["h3"].process->kill_and_reap();
  c["h3"].exit_code = -1;

  c.finish(60s);
  double named_t = 0;
  for (const auto& n : kSurvivors) {
    const auto& t = c[n];
    INFO(n << " log:\n" << c.log(n));
    CHECK(t.exit_code == std::optional<int>(0));
    REQUIRE(!t.steps.empty());
    CHECK(t.steps.back().step == static_cast<uint64_t>(kSteps - 1));
    for (const auto& s : t.steps) CHECK_MESSAGE(s.ok, n << " step " << s.step << " failed its check");
    // Named in the world of six, then a rebuild into five (as after a leave), never back to six.
    const auto named = std::find_if(t.steps.begin(), t.steps.end(),
                                    [](const StepRecord& s) { return s.world == 6 && !s.stragglers.empty(); });
    REQUIRE(named != t.steps.end());
    CHECK(named->stragglers == std::vector<std::string>{"h3"});
    named_t = std::max(named_t, named->t);
    const auto five = std::find_if(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return s.world == 5; });
    REQUIRE(five != t.steps.end());
    CHECK(five->rebuilt);
    CHECK(std::all_of(five, t.steps.end(), [](const StepRecord& s) { return s.world == 5 && s.stragglers.empty(); }));
    // Generous: named at once, evicted after --evict-after (2 s) and a settle window.
    CHECK(five->t - named->t < 10.0);
    const double slow = median_step_s(t, 6, named->t - 1.0);
    const double after = median_step_s(t, 5, five->t);
    CHECK(after < slow);  // the survivors no longer wait for h3 (30% apart: far above the noise)
    MESSAGE(n << ": step " << slow * 1000 << " ms with h3 named, " << after * 1000 << " ms after its eviction; evicted "
              << five->t - named->t << " s after the verdict");
  }
  // h3 never trained past the view that evicted it: it waited to be readmitted until it was ended.
  CHECK(std::none_of(c["h3"].steps.begin(), c["h3"].steps.end(), [](const StepRecord& s) { return s.world == 5; }));
  CHECK(c.log("h3").find("was evicted from the job's view as a straggler") != std::string::npos);
  CHECK(c.log("h1").find("evicts h3 as a straggler") != std::string::npos);
}

TEST_CASE("--evict-stragglers refuses an open cluster: a forged figure could evict a healthy host") {
  const auto r = shoal::test::run_command({TRAINER_BINARY, "--name", "x", "--bind", "127.0.0.1:0", "--insecure",
                                           "--evict-stragglers", "--steps", "1"},
                                          20s);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("needs a cluster key") != std::string::npos);
  const auto a = shoal::test::run_command(
      {SHOAL_BINARY, "agent", "--name", "x", "--bind", "127.0.0.1:0", "--insecure", "--evict-stragglers"}, 20s);
  CHECK(a.exit_code == 2);
  CHECK(a.err.find("needs a cluster key") != std::string::npos);
}

TEST_CASE("with `shoal agent --evict-stragglers` and connected trainers, the slow host is evicted the same way") {
  // The verdict reaches the agents over their control sockets (health-report): each agent's own verdict
  // names b, so the proposer leaves it out and every acceptor agrees.
  TrainerCluster c;
  shoal::test::TempDir keys;
  const std::string key_file = write_key(keys);
  const std::vector<std::string> agents = {"a", "b", "c", "d"};
  std::string seed;
  for (const auto& a : agents) {
    const auto addr = c.start_agent(a, seed, 1,
                                    {"--key-file", key_file, "--min-hosts", "3", "--evict-stragglers", "--evict-after",
                                     "2", "--evict-hold-down", "120", "--log-level", "warn"});
    if (seed.empty()) seed = addr;
  }
  for (const auto& a : agents) {
    c.start_connected(a + "0", a, 0, kSteps, {"--step-ms", std::to_string(a == "b" ? kStepMs * 13 / 10 : kStepMs)});
  }
  const std::vector<std::string> survivors = {"a0", "c0", "d0"};
  const auto in_three = [&](const std::string& n) {
    const auto& s = c[n].steps;
    return std::count_if(s.begin(), s.end(), [](const StepRecord& r) { return r.world == 3; }) >= 5;
  };
  const bool evicted = c.until(
      [&] { return std::all_of(survivors.begin(), survivors.end(), [&](const std::string& n) { return in_three(n); }); },
      45s);
  REQUIRE_MESSAGE(evicted, "the survivors never trained as three; a0's log:\n" << c.log("a0") << "\nb0's log:\n"
                                                                               << c.log("b0"));
  const auto view = ask(c.socket_of("c"), "view");
  CHECK(view["members"].size() == 3);
  for (const auto& m : view["members"]) CHECK(m["name"] != "b");
  const auto health = ask(c.socket_of("a"), "health");
  CHECK(health["authenticated"] == true);
  c["b0"].process->kill_and_reap();  // waiting, out of the view, to be readmitted
  c["b0"].exit_code = 137;
  c.finish(60s);
  for (const auto& n : survivors) CHECK(c[n].exit_code == std::optional<int>(0));
}
