// Whose slots an agent trusts: under the systemd unit the agent runs as root and trainers as their own
// users. A slot written by another user is refused as foreign until a trainer of that user, in the agent's
// group, reports a sealed version on the control socket; the kernel's peer credentials (SO_PEERCRED) then
// name the user whose slots the agent reads. A user outside the agent's group is refused that report (it
// would make itself the slots' trusted writer). Needs root (a child becomes user nobody).
#include <doctest/doctest.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "../ckpt_shm/shm_test_job.hpp"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "control/client.hpp"
#include "daemon/agent.hpp"
#include "support/eventually.hpp"

using namespace std::chrono_literals;

namespace {

constexpr uid_t kNobody = 65534;

// In a child that becomes user nobody of group `group`: seals `rank`'s version of `step` in `store`, then
// (when `notify`) tells the agent over the control socket at `control`. The exit status says which part
// failed (10: credentials, 11: open, 12: save, 13: no reply, 14: the agent refused the report).
int as_nobody(const std::string& job, const std::string& store, uint32_t rank, uint64_t step, const std::string& control,
              bool notify, gid_t group) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(group) != 0 || ::setuid(kNobody) != 0) ::_exit(10);
    auto rs = shoal::ckpt::RankStore::open({.job = job, .rank = rank, .world = 2, .store = store});
    if (!rs) ::_exit(11);
    const std::vector<shoal::ckpt::BufferSpec> specs = {{"params", 4096}};
    if (!rs->begin_save(step, specs) || !rs->commit()) ::_exit(12);
    if (notify) {
      // A deadline for a loaded machine, not for the agent's speed: 13 says the reply never came.
      const auto r = shoal::control::control_request(
          control, "ckpt-committed " + std::to_string(rank) + " " + std::to_string(step), std::chrono::seconds(30));
      if (!r) ::_exit(13);
      if (r->find("error") != std::string::npos) ::_exit(14);
    }
    ::_exit(0);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

using shoal::test::eventually;

}  // namespace

TEST_CASE("a slot written by another user is trusted once a trainer of that user reports on the control socket") {
  if (::geteuid() != 0) {
    MESSAGE("not root: cannot write a slot as another user here");
    return;
  }
  shoal::ckpt::test::ShmTestJob job{"owner"};
  shoal::daemon::AgentConfig cfg;
  cfg.name = "solo";
  cfg.bind = {"127.0.0.1", 0};
  cfg.gossip.cluster_id = "owner-test";
  cfg.ckpt.job = job.name();
  cfg.ckpt.store = job.name() + "-solo";
  cfg.control_path = "/tmp/shoal-owner-test-" + std::to_string(::getpid()) + ".sock";
  shoal::daemon::Agent agent(cfg);
  REQUIRE(agent.start().ok());
  std::thread loop([&agent] { (void)agent.run(); });
  // The socket is 0660 root:root; open it so that user nobody reaches the request at all.
  REQUIRE(::chmod(cfg.control_path.c_str(), 0666) == 0);
  const auto version_of = [&](uint64_t step) {
    for (const auto& h : agent.checkpoints().held()) {
      if (!h.replica && h.version && h.version->id.step == step) return true;
    }
    return false;
  };
  const auto refused_slots = [&] {
    size_t n = 0;
    for (const auto& h : agent.checkpoints().held()) n += h.refused == shoal::ckpt::SegmentRefusal::foreign_owner;
    return n;
  };

  // Written by nobody, unreported: refused as another user's, never read.
  CHECK(as_nobody(job.name(), cfg.ckpt.store, 0, 5, cfg.control_path, false, kNobody) == 0);
  CHECK(refused_slots() >= 1);
  CHECK_FALSE(version_of(5));

  // Reported by nobody outside the agent's group: refused, and its slots stay another user's.
  CHECK(as_nobody(job.name(), cfg.ckpt.store, 0, 6, cfg.control_path, true, kNobody) == 14);
  CHECK(agent.checkpoints().owners().slots.uid != kNobody);
  CHECK_FALSE(version_of(6));

  // A trainer running as nobody in the agent's group (root's, here) reports its next version: the kernel
  // names nobody, and its slots count.
  CHECK(as_nobody(job.name(), cfg.ckpt.store, 0, 7, cfg.control_path, true, ::getegid()) == 0);
  CHECK(eventually([&] { return version_of(7); }, 20s));
  CHECK(refused_slots() == 0);

  agent.stop_now();
  loop.join();
  (void)shoal::ckpt::RankStore::remove_segments(cfg.ckpt.store, 0);  // nobody's: the store is not the job's name
}
