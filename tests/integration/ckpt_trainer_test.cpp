// In-memory checkpoints end to end, with the example trainer as real processes on loopback (each acting
// as its own host: --host gives it its own placement identity and shared-memory segments). A host killed
// with SIGKILL takes its own memory with it, yet a new host that joins restores that rank's state from
// the replica a peer keeps, byte-identical to what the step must have produced, and so do the survivors.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trainer_cluster.hpp"

using namespace std::chrono_literals;

namespace {

using shoal::test::StepRecord;
using shoal::test::TrainerCluster;
using shoal::test::reached_world;

// Removes every shared-memory segment of the job, also when the test fails.
struct JobSegments {
  std::string job = "ckpt-it-" + std::to_string(::getpid());
  JobSegments() = default;
  explicit JobSegments(std::string name) : job(std::move(name)) {}
  ~JobSegments() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
      if (e.path().filename().string().starts_with("shoal." + job)) std::filesystem::remove(e.path(), ec);
    }
  }
};

const StepRecord* first_restore(const shoal::test::Trainer& t, double after) {
  for (const auto& s : t.steps) {
    if (s.t > after && s.restored_step) return &s;
  }
  return nullptr;
}

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

// The /dev/shm segments of `store` followed by a cluster lineage ("shoal.<store>-<12 hex digits>.").
size_t lineage_segments(const std::string& store) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const auto file = e.path().filename().string();
    const auto prefix = "shoal." + store + "-";
    if (!file.starts_with(prefix) || file.size() < prefix.size() + 13 || file[prefix.size() + 12] != '.') continue;
    const auto hex = file.substr(prefix.size(), 12);
    n += hex.find_first_not_of("0123456789abcdef") == std::string::npos ? 1 : 0;
  }
  return n;
}

TEST_CASE("a host killed with SIGKILL: the host that replaces it restores that rank from a peer's replica") {
  JobSegments segments;
  TrainerCluster c;
  const int steps = 400;
  // No --job: the job is the cluster id, and its segments belong to this cluster's lineage alone.
  const auto args = [&](const std::string& host) {
    return std::vector<std::string>{"--ckpt-every", "10", "--min-hosts", "3", "--cluster", segments.job, "--host", host};
  };
  const std::string seed = c.start("t0", "", steps, args("t0")).addr;
  c.start("t1", seed, steps, args("t1"));
  c.start("t2", seed, steps, args("t2"));
  // Two saves done and replicated (the state is 16 KiB: a copy takes well under a step).
  REQUIRE_MESSAGE(c.until([&] {
    for (const char* n : {"t0", "t1", "t2"}) {
      if (!reached_world(c[n], 3) || c[n].steps.back().step < 25) return false;
    }
    return true;
  }, 60s), "the three trainers never trained together; t0's log:\n" << c.log("t0"));
  CHECK(lineage_segments(segments.job + "-t0") > 0);

  const double kill_t = now_s();
  c["t2"].process->send_signal(SIGKILL);
  c["t2"].exit_code = 137;
  // --min-hosts 3: the survivors wait for a third host instead of shrinking.
  c.pump(1500ms);
  c.start("t3", seed, steps, args("t3"));
  c.finish(120s);

  const StepRecord* joiner = first_restore(c["t3"], 0);
  INFO("t3's log:\n" << c.log("t3"));
  REQUIRE_MESSAGE(joiner, "t3 never restored a checkpoint");
  CHECK(joiner->state_ok);
  CHECK(joiner->restore_source != "local");  // its own memory holds nothing of this job
  CHECK(*joiner->restored_step >= 19);
  for (const char* n : {"t0", "t1"}) {
    INFO(n << "'s log:\n" << c.log(n));
    const StepRecord* r = first_restore(c[n], kill_t);
    REQUIRE_MESSAGE(r, n << " never restored after the kill");
    CHECK(r->state_ok);
    CHECK(r->restored_step == joiner->restored_step);  // every rank of the view restores the same step
  }
  for (const char* n : {"t0", "t1", "t3"}) {
    INFO(n << "'s log:\n" << c.log(n));
    CHECK(c[n].exit_code == std::optional<int>(0));
    REQUIRE(!c[n].steps.empty());
    CHECK(c[n].steps.back().step == static_cast<uint64_t>(steps - 1));
    for (const auto& s : c[n].steps) CHECK_MESSAGE(s.ok, n << " step " << s.step << " failed its check");
  }
}

TEST_CASE("a host that joins costs nobody a rollback: the newcomer gets the live state, no step is redone") {
  JobSegments segments;
  TrainerCluster c;
  const int steps = 300;
  const auto args = [&](const std::string& host) {
    return std::vector<std::string>{"--ckpt-every", "10", "--job", segments.job, "--host", host};
  };
  const std::string seed = c.start("t0", "", steps, args("t0")).addr;
  c.start("t1", seed, steps, args("t1"));
  REQUIRE(c.until(
      [&] { return reached_world(c["t0"], 2) && reached_world(c["t1"], 2) && c["t0"].steps.back().step > 25; }, 60s));
  const double join_t = now_s();
  c.start("t2", seed, steps, args("t2"));
  c.finish(120s);
  for (const char* n : {"t0", "t1", "t2"}) {
    INFO(n << "'s log:\n" << c.log(n));
    CHECK(c[n].exit_code == std::optional<int>(0));
    // Nobody restored a checkpoint after the join...
    CHECK(first_restore(c[n], join_t) == nullptr);
    // ...and each step ran once on the survivors: the step numbers only go up.
    for (size_t i = 1; i < c[n].steps.size(); ++i) {
      CHECK_MESSAGE(c[n].steps[i].step == c[n].steps[i - 1].step + 1, n << " redid step " << c[n].steps[i].step);
    }
  }
  // The newcomer's first step continues where the survivors were, from state proven right.
  REQUIRE(!c["t2"].steps.empty());
  const auto& first = c["t2"].steps.front();
  REQUIRE(first.synced_step.has_value());
  CHECK(first.state_ok);
  CHECK(first.synced_from >= 0);
  CHECK(first.step == *first.synced_step + 1);
  CHECK(first.step > 25);
}

TEST_CASE("every host killed and its memory lost: restarted with --ckpt-dir, the job resumes from disk") {
  JobSegments segments;
  shoal::test::TempDir disk;
  TrainerCluster c;
  const int steps = 300;
  const auto args = [&](const std::string& host) {
    return std::vector<std::string>{"--ckpt-every", "10", "--min-hosts", "2", "--job",     segments.job,
                                    "--host",       host, "--ckpt-dir",  disk.path()};
  };
  const auto persisted = [&](const std::string& host, uint32_t rank) {
    std::error_code ec;
    uint64_t newest = 0;
    for (const auto& e : std::filesystem::directory_iterator(disk.path() + "/" + host + "/" + segments.job, ec)) {
      const std::string f = e.path().filename().string();
      const std::string prefix = "r" + std::to_string(rank) + ".s";
      if (f.starts_with(prefix) && f.ends_with(".shoalckpt")) {
        newest = std::max<uint64_t>(newest, std::stoull(f.substr(prefix.size())));
      }
    }
    return newest;
  };
  std::string seed = c.start("t0", "", steps, args("t0")).addr;
  c.start("t1", seed, steps, args("t1"));
  REQUIRE_MESSAGE(c.until([&] { return persisted("t0", 0) >= 29 && persisted("t1", 1) >= 29; }, 60s),
                  "no step 29 of both ranks reached the disk; t0's log:\n" << c.log("t0"));
  c["t0"].process->send_signal(SIGKILL);
  c["t1"].process->send_signal(SIGKILL);
  c["t0"].process->wait_exit(10s);
  c["t1"].process->wait_exit(10s);
  const uint64_t on_disk = std::min(persisted("t0", 0), persisted("t1", 1));
  {
    JobSegments reboot{segments.job};  // every host's /dev/shm is empty after a reboot
  }

  seed = c.start("t0", "", steps, args("t0")).addr;
  c.start("t1", seed, steps, args("t1"));
  c.finish(120s);
  for (const char* n : {"t0", "t1"}) {
    INFO(n << "'s log:\n" << c.log(n));
    const StepRecord* r = first_restore(c[n], 0);
    REQUIRE_MESSAGE(r, n << " never restored after the restart");
    CHECK(r->state_ok);
    CHECK(r->restore_source == "local");  // loaded from disk into this host's memory by its agent
    CHECK(*r->restored_step >= on_disk);
    CHECK(c[n].exit_code == std::optional<int>(0));
    CHECK(c[n].steps.back().step == static_cast<uint64_t>(steps - 1));
  }
}

TEST_CASE("every host lost: new hosts of other names in another cluster resume from the newest complete step") {
  // The first run's three hosts persist under DIR/t<i>/JOB/ and are all killed with their memory. Two hosts of
  // other names (spot replacements; another cluster id, as a resubmitted Slurm job gets) with the same --job
  // resume from what the lost ones persisted: the newest step every saved rank has a file of, whoever wrote
  // it. A newest step that lost a rank's file, and a forged, mis-named or truncated "step 1000000" of every
  // rank, are not chosen.
  JobSegments segments;
  shoal::test::TempDir disk;
  TrainerCluster c;
  const int steps = 300;
  const auto args = [&](const std::string& host, const std::string& cluster, const char* hosts) {
    return std::vector<std::string>{"--ckpt-every", "10", "--min-hosts", hosts,       "--job",     segments.job,
                                    "--host",       host, "--ckpt-dir",  disk.path(), "--cluster", cluster};
  };
  const auto job_dir = [&](const std::string& member) { return disk.path() + "/" + member + "/" + segments.job; };
  // The steps of `rank` persisted under `member`'s directory.
  const auto steps_of = [&](const std::string& member, uint32_t rank) {
    std::vector<uint64_t> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(job_dir(member), ec)) {
      const std::string f = e.path().filename().string();
      const std::string prefix = "r" + std::to_string(rank) + ".s";
      if (f.starts_with(prefix) && f.ends_with(".shoalckpt")) out.push_back(std::stoull(f.substr(prefix.size())));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto newest = [&](const std::string& member, uint32_t rank) {
    const auto s = steps_of(member, rank);
    return s.empty() ? uint64_t{0} : s.back();
  };
  const std::vector<std::string> old_hosts{"t0", "t1", "t2"};
  std::string seed = c.start("t0", "", steps, args("t0", "first-run", "3")).addr;
  c.start("t1", seed, steps, args("t1", "first-run", "3"));
  c.start("t2", seed, steps, args("t2", "first-run", "3"));
  // Two persisted steps of every rank (the default --ckpt-dir-keep 2): the newest and the one before it.
  REQUIRE_MESSAGE(c.until(
                      [&] {
                        for (uint32_t r = 0; r < 3; ++r) {
                          if (steps_of(old_hosts[r], r).size() < 2) return false;
                        }
                        return true;
                      },
                      90s),
                  "not every rank persisted two steps; t0's log:\n"
                      << c.log("t0"));
  for (const auto& h : old_hosts) c[h].process->send_signal(SIGKILL);
  for (const auto& h : old_hosts) c[h].process->wait_exit(10s);
  {
    JobSegments reboot{segments.job};  // every host's /dev/shm is empty: the hosts are gone
  }
  // Rank 2's newest file is lost: its step is incomplete now (unless rank 2's older step is newer than
  // another rank's newest, the whole step is the newest that every rank still has).
  std::filesystem::remove(job_dir("t2") + "/r2.s" + std::to_string(newest("t2", 2)) + ".shoalckpt");
  uint64_t expected = 0;
  for (const uint64_t s : steps_of("t0", 0)) {
    const auto has = [&](const std::string& m, uint32_t r) {
      const auto v = steps_of(m, r);
      return std::find(v.begin(), v.end(), s) != v.end();
    };
    if (has("t1", 1) && has("t2", 2)) expected = std::max(expected, s);
  }
  REQUIRE_MESSAGE(expected > 0, "no step that every rank persisted is left");
  // A forger's "step 1000000" of every rank: garbage, a real file under another step's name, a truncated one.
  std::filesystem::create_directories(job_dir("forger"));
  std::filesystem::permissions(disk.path() + "/forger", std::filesystem::perms::owner_all);
  std::filesystem::permissions(job_dir("forger"), std::filesystem::perms::owner_all);
  const auto forged = [&](uint32_t rank) {
    return job_dir("forger") + "/r" + std::to_string(rank) + ".s1000000.shoalckpt";
  };
  const auto real = [&](uint32_t rank) {
    return job_dir(old_hosts[rank]) + "/r" + std::to_string(rank) + ".s" + std::to_string(expected) + ".shoalckpt";
  };
  {
    std::ofstream garbage(forged(0), std::ios::binary);
    garbage << std::string(8192, 'x');
  }
  std::filesystem::copy_file(real(1), forged(1));
  std::filesystem::copy_file(real(2), forged(2));
  std::filesystem::resize_file(forged(2), 300);
  for (uint32_t r = 0; r < 3; ++r) {
    std::filesystem::permissions(forged(r), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }

  seed = c.start("u0", "", steps, args("u0", "second-run", "2")).addr;
  c.start("u1", seed, steps, args("u1", "second-run", "2"));
  c.finish(150s);
  for (const std::string n : {"u0", "u1"}) {
    INFO(n << "'s log:\n" << c.log(n));
    const StepRecord* r = first_restore(c[n], 0);
    REQUIRE_MESSAGE(r, n << " never restored: it started from nothing");
    CHECK(r->state_ok);
    CHECK(*r->restored_step == expected);
    CHECK(c[n].exit_code == std::optional<int>(0));
    CHECK(c[n].steps.back().step == static_cast<uint64_t>(steps - 1));
  }
  // The new hosts persist under their own names.
  CHECK(std::max(newest("u0", 0), newest("u0", 1)) > expected);
  CHECK(std::max(newest("u1", 0), newest("u1", 1)) > expected);
}

TEST_CASE("a lone new host resumes a world of two; with every file of a rank gone it starts from nothing at once") {
  JobSegments segments;
  shoal::test::TempDir disk;
  shoal::test::TempDir aside;
  TrainerCluster c;
  const auto args = [&](const std::string& host, const std::string& cluster, const char* hosts) {
    return std::vector<std::string>{"--ckpt-every", "10", "--min-hosts", hosts,       "--job",     segments.job,
                                    "--host",       host, "--ckpt-dir",  disk.path(), "--cluster", cluster};
  };
  const auto newest = [&](const std::string& member, uint32_t rank) {
    uint64_t out = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(disk.path() + "/" + member + "/" + segments.job, ec)) {
      const std::string f = e.path().filename().string();
      const std::string prefix = "r" + std::to_string(rank) + ".s";
      if (f.starts_with(prefix) && f.ends_with(".shoalckpt")) {
        out = std::max<uint64_t>(out, std::stoull(f.substr(prefix.size())));
      }
    }
    return out;
  };
  std::string seed = c.start("t0", "", 300, args("t0", "first-run", "2")).addr;
  c.start("t1", seed, 300, args("t1", "first-run", "2"));
  REQUIRE_MESSAGE(c.until([&] { return newest("t0", 0) >= 19 && newest("t1", 1) >= 19; }, 60s),
                  "no step 19 of both ranks reached the disk; t0's log:\n"
                      << c.log("t0"));
  for (const char* h : {"t0", "t1"}) c[h].process->send_signal(SIGKILL);
  for (const char* h : {"t0", "t1"}) c[h].process->wait_exit(10s);
  { JobSegments reboot{segments.job}; }
  const uint64_t expected = std::min(newest("t0", 0), newest("t1", 1));

  // Rank 1's files are all gone: no step is whole, and the new host trains from its initial state.
  std::filesystem::rename(disk.path() + "/t1", aside.path() + "/t1");
  c.start("v0", "", 30, args("v0", "second-run", "1"));
  c.finish(60s);
  {
    INFO("v0's log:\n" << c.log("v0"));
    REQUIRE_FALSE(c["v0"].steps.empty());
    CHECK(first_restore(c["v0"], 0) == nullptr);
    CHECK(c["v0"].steps.front().step == 0);
    CHECK(c["v0"].exit_code == std::optional<int>(0));
  }
  { JobSegments reboot{segments.job}; }
  // Back again (and v0's own world-of-one run removed): one host loads both ranks and resumes step `expected`.
  std::filesystem::remove_all(disk.path() + "/v0");
  std::filesystem::rename(aside.path() + "/t1", disk.path() + "/t1");
  c.start("w0", "", 300, args("w0", "third-run", "1"));
  c.finish(90s);
  INFO("w0's log:\n" << c.log("w0"));
  const StepRecord* r = first_restore(c["w0"], 0);
  REQUIRE_MESSAGE(r, "w0 never restored: it started from nothing");
  CHECK(r->state_ok);
  CHECK(*r->restored_step == expected);
  CHECK(r->world == 1);
  CHECK(c["w0"].exit_code == std::optional<int>(0));
  CHECK(c["w0"].steps.back().step == 299u);
}
