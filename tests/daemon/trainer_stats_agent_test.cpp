// What a local trainer's run lost, at a real agent: `trainer-stats` over the control socket is kept per local
// rank and replaced by the next report, and shows in `shoal status` (its JSON and its screen) and in /metrics
// (shoal_trainer_*, by rank); a malformed report or one for a slot the host does not have is refused and
// counted; an embedded trainer's figures (Agent::report_trainer_stats) land in the same place.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "../ckpt_shm/shm_test_job.hpp"
#include "../support/http_request.hpp"
#include "../support/process.hpp"
#include "control/client.hpp"
#include "control/replies.hpp"
#include "daemon/agent.hpp"

using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// GET /metrics: the body.
std::string metrics_body(uint16_t port) { return shoal::test::http_request(port, "GET", "/metrics").second; }

std::string ask(const std::string& path, const std::string& line) {
  auto r = shoal::control::control_request(path, line, 5s);
  REQUIRE_MESSAGE(r.ok(), line);
  return *r;
}

std::optional<double> figure(const shoal::control::StatusTrainer& t, const std::string& key) {
  for (const auto& [k, v] : t.figures) {
    if (k == key) return v;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("a trainer's run figures reach status and /metrics per local rank, the newest report replacing the last") {
  shoal::ckpt::test::ShmTestJob job{"trainers"};
  shoal::daemon::AgentConfig cfg;
  cfg.name = "solo";
  cfg.bind = {"127.0.0.1", 0};
  cfg.gossip.cluster_id = "trainer-stats-test";
  cfg.meta.slots = 2;
  cfg.ckpt.job = job.name();
  cfg.ckpt.store = job.name() + "-solo";
  cfg.control_path = "/tmp/shoal-trainers-" + std::to_string(::getpid()) + ".sock";
  cfg.metrics = shoal::net::HostPort{"127.0.0.1", 0};
  cfg.warn_open_cluster = false;
  shoal::daemon::Agent agent(cfg);
  REQUIRE(agent.start().ok());
  std::thread loop([&agent] { (void)agent.run(); });
  const auto& path = cfg.control_path;

  auto status = [&] {
    auto doc = shoal::control::parse_reply<shoal::control::StatusReply>(ask(path, "status"));
    REQUIRE(doc.ok());
    return *doc;
  };
  CHECK(status().trainers.empty());
  const auto before = shoal::test::run_command({SHOAL_BINARY, "status", "--control", path});
  CHECK(contains(before.out, "trainers no reports yet"));

  const std::string all =
      " steps_discarded=1 steps_redone=2 steps_rolled_back=3 rebuilds=1 samples_trained=320 startup_s=1.500 "
      "rebuild_s=0.250 stall_s=0.200 save_s=0.500 lost_step_s=0.300 wall_s=20.000 productive_s=17.250 ettr=0.862500";
  CHECK(contains(ask(path, "trainer-stats 1 steps_completed=10" + all), "\"ok\":true"));
  CHECK(contains(ask(path, "trainer-stats 1 steps_completed=12" + all), "\"ok\":true"));  // replaces the first
  // Refused, and counted: a slot this host does not have, an unknown figure, a count that is not whole.
  CHECK(contains(ask(path, "trainer-stats 2 wall_s=1"), "slot 2 does not exist here (2 slot(s))"));
  CHECK(contains(ask(path, "trainer-stats 0 speed=1"), "unknown figure 'speed'"));
  CHECK(contains(ask(path, "trainer-stats 0 rebuilds=0.5"), "is not a whole count"));

  const auto doc = status();
  REQUIRE(doc.trainers.size() == 1);
  const auto& t = doc.trainers[0];
  CHECK(t.rank == 1);
  CHECK(t.reports == 2);
  CHECK(t.age_s >= 0);
  CHECK(t.age_s < 30);
  CHECK(figure(t, "steps_completed") == 12.0);
  CHECK(figure(t, "steps_rolled_back") == 3.0);
  CHECK(figure(t, "stall_s") == 0.2);
  CHECK(figure(t, "ettr") == doctest::Approx(0.8625));
  CHECK(t.figures.size() == 14);
  CHECK(contains(ask(path, "status"), "\"figures\":{\"steps_completed\":12,\"steps_discarded\":1,"));

  const auto screen = shoal::test::run_command({SHOAL_BINARY, "status", "--control", path});
  INFO(screen.out << screen.err);
  CHECK(screen.exit_code == 0);
  CHECK(contains(screen.out, "host     solo ("));  // the lines before stay
  CHECK(contains(screen.out,
                 "  rank 1: 12 step(s), 320 sample(s), 1 rebuild(s); steps discarded 1, redone 2, "
                 "rolled back 3\n"));
  CHECK(contains(screen.out,
                 "seconds: startup 1.50, rebuild 0.25, stall 0.20, save 0.50, lost steps 0.30, wall "
                 "20.00; ETTR 0.863 (reported "));

  const std::string body = metrics_body(agent.metrics_port());
  INFO(body);
  CHECK(contains(body, "# TYPE shoal_trainer_steps_completed gauge\nshoal_trainer_steps_completed{rank=\"1\"} 12\n"));
  CHECK(contains(body, "shoal_trainer_steps_discarded{rank=\"1\"} 1\n"));
  CHECK(contains(body, "shoal_trainer_rebuild_seconds{rank=\"1\"} 0.25\n"));
  CHECK(contains(body, "shoal_trainer_stall_seconds{rank=\"1\"} 0.2\n"));
  CHECK(contains(body, "shoal_trainer_ettr{rank=\"1\"} 0.8625\n"));
  CHECK(contains(body, "shoal_trainer_report_age_seconds{rank=\"1\"} "));
  CHECK(contains(body, "shoal_trainer_reports_total 2\n"));
  CHECK(contains(body, "shoal_trainer_reports_refused_total 3\n"));
  CHECK_FALSE(contains(body, "rank=\"0\""));

  // An embedded trainer hands its figures to the agent directly (local rank 0).
  shoal::health::TrainerStats embedded;
  embedded.figures[static_cast<size_t>(shoal::health::Figure::steps_completed)] = 5;
  agent.report_trainer_stats(0, embedded);
  agent.report_trainer_stats(7, embedded);  // no such slot: dropped
  bool seen = false;
  for (int i = 0; i < 50 && !seen; ++i) {
    const auto now = status();
    seen = now.trainers.size() == 2 && now.trainers[0].rank == 0 && figure(now.trainers[0], "steps_completed") == 5.0;
    if (!seen) std::this_thread::sleep_for(20ms);
  }
  CHECK(seen);
  CHECK(contains(metrics_body(agent.metrics_port()), "shoal_trainer_steps_completed{rank=\"0\"} 5\n"));
  agent.stop_now();
  loop.join();
}
