// A job nobody named keeps its checkpoints to its own cluster (issue 25, item 3): its segments carry the
// lineage of the cluster's first view, so a cluster formed anew never counts what an earlier run left,
// two clusters of one id on one host never share a segment, and an agent that restarts into its running
// cluster finds its own versions again. Real agents on loopback, real /dev/shm.
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "../ckpt_shm/shm_test_job.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "daemon/agent.hpp"
#include "support/eventually.hpp"

using namespace std::chrono_literals;
using shoal::ckpt::store_for_lineage;
using shoal::daemon::Agent;
using shoal::daemon::AgentConfig;

namespace {

using shoal::test::eventually;

// The segments whose names start with "shoal.<prefix>" (every lineage of a test's stores), removed at
// the end of the test whatever happened.
struct ShmPrefix {
  std::string prefix;
  std::vector<std::string> found() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
      const auto file = e.path().filename().string();
      if (file.rfind("shoal." + prefix, 0) == 0) out.push_back(file);
    }
    return out;
  }
  ~ShmPrefix() {
    for (const auto& f : found()) (void)shoal::ckpt::ShmSegment::unlink("/" + f);
  }
};

// An agent of an unnamed job: its store is `base` plus the lineage of its cluster's first view.
struct UnnamedJobAgent {
  std::unique_ptr<Agent> agent;
  std::thread thread;
  std::atomic<size_t> view_size{0};
  std::atomic<uint64_t> lineage{0};

  UnnamedJobAgent(const std::string& name, const std::string& job, const std::string& base,
                  std::vector<shoal::net::HostPort> seeds) {
    AgentConfig cfg;
    cfg.name = name;
    cfg.bind = {"127.0.0.1", 0};
    cfg.seeds = std::move(seeds);
    cfg.gossip.cluster_id = "lineage-test";
    cfg.meta.slots = 1;
    cfg.meta.host = name;
    cfg.ckpt.job = job;
    cfg.ckpt.store = base;
    cfg.ckpt.store_by_lineage = true;
    agent = std::make_unique<Agent>(std::move(cfg));
    agent->add_view_observer([this](const shoal::membership::View& v) {
      lineage = v.lineage();
      view_size = v.size();
    });
    REQUIRE(agent->start().ok());
    thread = std::thread([a = agent.get()] { (void)a->run(); });
  }
  ~UnnamedJobAgent() {
    agent->stop_now();
    if (thread.joinable()) thread.join();
  }
  std::string store() const { return agent->checkpoints().store(); }
  size_t versions_held() const {
    size_t n = 0;
    for (const auto& h : agent->checkpoints().held()) n += h.version ? 1 : 0;
    return n;
  }
  bool holds_replica(uint32_t rank, uint64_t step) const {
    for (const auto& h : agent->checkpoints().held()) {
      if (h.replica && h.version && h.version->id.rank == rank && h.version->id.step == step) return true;
    }
    return false;
  }
};

// A sealed version of `rank` at `step` in `store`, as a trainer leaves it.
void save(const std::string& job, const std::string& store, uint64_t step, uint32_t rank = 0) {
  auto rs = shoal::ckpt::RankStore::open({.job = job, .rank = rank, .world = 2, .store = store});
  REQUIRE(rs);
  const std::vector<shoal::ckpt::BufferSpec> specs = {{"params", 64 << 10}};
  REQUIRE(rs->begin_save(step, specs));
  REQUIRE(rs->commit());
}

}  // namespace

TEST_CASE("an unnamed job's new cluster sees nothing an earlier run left, nor another cluster of its id beside it") {
  const shoal::ckpt::test::ShmTestJob job{"lineage"};
  const ShmPrefix cleanup{job.name()};
  const std::string base = job.name() + "-a";
  // What earlier runs left: one from before lineages (the bare store), one of another cluster's lineage.
  save(job.name(), base, 7);
  save(job.name(), store_for_lineage(base, 0x5eed), 8);

  UnnamedJobAgent a("a", job.name(), base, {});
  CHECK(a.store().empty());  // named at the first view, not before
  REQUIRE(eventually([&] { return a.view_size == 1; }, 15s));
  REQUIRE(a.lineage != 0);
  CHECK(a.store() == store_for_lineage(base, a.lineage));
  CHECK(a.versions_held() == 0);  // neither leftover is this cluster's
  CHECK(cleanup.found().size() >= 2);  // ...nor is either removed: `shoal ckpt gc` decides about those

  // A second cluster of the same id, on the same host, with the same base store name: other segments.
  UnnamedJobAgent other("a", job.name(), base, {});
  REQUIRE(eventually([&] { return other.view_size == 1; }, 15s));
  CHECK(other.lineage != a.lineage);
  CHECK(other.store() != a.store());
  save(job.name(), a.store(), 9);
  CHECK(eventually([&] { return a.versions_held() == 1; }, 5s));
  CHECK(other.versions_held() == 0);
}

TEST_CASE("an agent restarting into its running cluster finds its own versions under the cluster's lineage") {
  const shoal::ckpt::test::ShmTestJob job{"lineage-join"};
  const ShmPrefix cleanup{job.name()};
  UnnamedJobAgent a("a", job.name(), job.name() + "-a", {});
  REQUIRE(eventually([&] { return a.view_size == 1; }, 15s));
  // b ran in this cluster before its agent restarted: its rank 1's version is under the cluster's lineage.
  save(job.name(), store_for_lineage(job.name() + "-b", a.lineage), 9, 1);
  UnnamedJobAgent b("b", job.name(), job.name() + "-b", {{"127.0.0.1", a.agent->port()}});
  REQUIRE(eventually([&] { return a.view_size == 2 && b.view_size == 2; }, 15s));
  CHECK(b.lineage == a.lineage);
  CHECK(b.store() == store_for_lineage(job.name() + "-b", a.lineage));
  CHECK_MESSAGE(eventually([&] { return a.holds_replica(1, 9); }, 10s), "b's own version was not replicated");
}
