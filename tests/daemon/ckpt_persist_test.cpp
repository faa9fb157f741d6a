// `shoal agent --ckpt-dir` as a real process: a version a trainer commits reaches the directory in the
// background, byte-identical and listed by `ckpt-ls`; on SIGTERM the agent persists the newest version
// it was never told about before it exits; bad flag combinations are usage errors; a directory others may
// write is refused, and what was planted in the agent's own (a FIFO, a link, forged and corrupt files, an
// oversized manifest) neither blocks its start nor hides the newest good version.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../ckpt_shm/shm_test_job.hpp"
#include "../support/agent_fixture.hpp"
#include "ckpt_shm/persist_dir.hpp"
#include "ckpt_shm/persist_trust.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "ckpt_shm/shm_segment.hpp"

using shoal::test::AgentCluster;
using shoal::test::run_command;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::byte pattern(uint64_t step, size_t i) { return std::byte((step * 29 + i * 13 + (i >> 10)) & 0xFF); }

// Saves rank 0's version of `step` into the host's slots, as a trainer would; returns the version's
// bytes as stored.
std::vector<std::byte> save(const std::string& job, const std::string& store, uint64_t step) {
  auto rs = shoal::ckpt::RankStore::open({.job = job, .rank = 0, .world = 1, .store = store});
  REQUIRE(rs);
  const std::vector<shoal::ckpt::BufferSpec> specs = {{"params", (2u << 20) + 3}, {"opt", 4096}};
  auto spans = rs->begin_save(step, specs);
  REQUIRE(spans);
  for (auto& b : *spans) {
    for (size_t i = 0; i < b.bytes.size(); ++i) b.bytes[i] = pattern(step, i);
  }
  REQUIRE(rs->commit());
  for (uint32_t slot = 0; slot < 2; ++slot) {
    auto seg = shoal::ckpt::ShmSegment::open_existing(*shoal::ckpt::slot_segment_name(store, 0, slot));
    if (!seg) continue;
    auto info = shoal::ckpt::decode_version(seg->bytes());
    if (info && info->id.step == step) {
      const auto bytes = seg->bytes().first(info->total_bytes);
      return {bytes.begin(), bytes.end()};
    }
  }
  FAIL("the saved version is not in any slot");
  return {};
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Host {
  shoal::ckpt::test::ShmTestJob job{"persist"};
  std::string store = shoal::ckpt::store_for_host(job.name(), "p1");
  AgentCluster cluster;
  std::string dir = cluster.dir() + "/ckpt";
  ~Host() {
    (void)shoal::ckpt::RankStore::remove_segments(store, 0);
    (void)shoal::ckpt::ReplicaStore::remove_all(store);
  }
  void start() { cluster.start("p1", {}, {"--job", job.name(), "--host", "p1", "--ckpt-dir", dir}); }
  std::string host_dir() const { return dir + "/p1"; }  // DIR/<member name>/<job>/
  std::string file(uint64_t step) const {
    return host_dir() + "/" + job.name() + "/r0.s" + std::to_string(step) + ".shoalckpt";
  }
};

}  // namespace

TEST_CASE("a committed version is persisted in the background, byte-identical, and listed") {
  Host host;
  host.start();
  const auto version = save(host.job.name(), host.store, 3);
  const auto told = host.cluster.request<shoal::control::CommittedReply>("p1", "ckpt-committed 0 3");
  REQUIRE(told.has_value());
  CHECK(told->ok);
  INFO(host.cluster.log_tail("p1"));
  REQUIRE(AgentCluster::eventually([&] { return fs::exists(host.file(3)); }, 15s));
  CHECK(fs::file_size(host.file(3)) == version.size());

  auto dir = shoal::ckpt::PersistDir::open({.dir = host.host_dir(), .job = host.job.name()});
  REQUIRE(dir);
  auto loaded = dir->load(0, 3);
  REQUIRE(loaded);
  CHECK(*loaded == version);
  CHECK(read_file(dir->job_dir() + "/MANIFEST").find("r0.s3.shoalckpt") != std::string::npos);

  REQUIRE(AgentCluster::eventually(
      [&] {
        const auto ls = host.cluster.request<shoal::control::CkptLsReply>("p1", "ckpt-ls");
        return ls && ls->persist && ls->persist->files.size() == 1 && ls->persist->files[0].step == 3u;
      },
      10s));
  const auto ls = host.cluster.request<shoal::control::CkptLsReply>("p1", "ckpt-ls");
  REQUIRE(ls.has_value());
  bool local_from_trainer = false;
  for (const auto& h : ls->held) {
    if (h.from == "(a trainer on this host)") local_from_trainer = true;
  }
  CHECK(local_from_trainer);
}

TEST_CASE("on SIGTERM the agent persists the newest version it was never told about, then exits 0") {
  Host host;
  host.start();
  const auto version = save(host.job.name(), host.store, 8);  // no ckpt-committed: only the exit path finds it
  std::this_thread::sleep_for(300ms);
  CHECK_FALSE(fs::exists(host.file(8)));
  auto& agent = host.cluster["p1"];
  agent.process->send_signal(SIGTERM);
  const auto code = agent.process->wait_exit(30s);
  INFO(host.cluster.log_tail("p1"));
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  REQUIRE(fs::exists(host.file(8)));
  auto dir = shoal::ckpt::PersistDir::open({.dir = host.host_dir(), .job = host.job.name()});
  REQUIRE(dir);
  auto loaded = dir->load(0, 8);
  REQUIRE(loaded);
  CHECK(*loaded == version);
  CHECK(host.cluster.log_tail("p1", 50).find("before exit") != std::string::npos);
}

TEST_CASE("--ckpt-dir flags: companions without it, and a directory that cannot be made, are refused") {
  auto keep_alone =
      run_command({SHOAL_BINARY, "agent", "--insecure", "--name", "x", "--bind", "127.0.0.1:0", "--ckpt-dir-keep", "3"});
  CHECK(keep_alone.exit_code == 2);
  CHECK(keep_alone.err.find("need --ckpt-dir") != std::string::npos);
  auto zero_keep = run_command({SHOAL_BINARY, "agent", "--insecure", "--name", "x", "--ckpt-dir", "/tmp/x", "--ckpt-dir-keep", "0"});
  CHECK(zero_keep.exit_code == 2);

  shoal::test::TempDir tmp;
  const std::string blocker = tmp.path() + "/a-file";
  std::ofstream(blocker) << "not a directory";
  auto bad_dir = run_command({SHOAL_BINARY, "agent", "--insecure", "--name", "x", "--bind", "127.0.0.1:0", "--control",
                              tmp.path() + "/s.sock", "--ckpt-dir", blocker + "/ckpt"},
                             20s);
  CHECK(bad_dir.exit_code == 1);
  CHECK(bad_dir.err.find("checkpoint directory") != std::string::npos);
  CHECK(bad_dir.err.find(blocker) != std::string::npos);
}

TEST_CASE("after the host's memory is lost, a restarted agent loads the newest persisted version back") {
  Host host;
  host.start();
  const auto version = save(host.job.name(), host.store, 4);
  REQUIRE(host.cluster.request<shoal::control::CommittedReply>("p1", "ckpt-committed 0 4").has_value());
  REQUIRE(AgentCluster::eventually([&] { return fs::exists(host.file(4)); }, 15s));
  auto& first = host.cluster["p1"];
  first.process->send_signal(SIGTERM);
  REQUIRE(first.process->wait_exit(30s).has_value());
  // A reboot: /dev/shm is empty, the directory is not.
  REQUIRE(shoal::ckpt::RankStore::remove_segments(host.store, 0).ok());
  REQUIRE(shoal::ckpt::ReplicaStore::remove_all(host.store).ok());

  host.start();
  INFO(host.cluster.log_tail("p1"));
  const auto ls = host.cluster.request<shoal::control::CkptLsReply>("p1", "ckpt-ls verify");
  REQUIRE(ls.has_value());
  REQUIRE(ls->held.size() == 1);
  const auto& replica = ls->held[0];
  CHECK(replica.kind == "replica");
  REQUIRE(replica.version.has_value());
  CHECK(replica.version->step == 4u);
  CHECK(replica.verified == true);
  CHECK(replica.from.value_or("").find("(disk: ") == 0);
  auto seg = shoal::ckpt::ShmSegment::open_existing(replica.segment);
  REQUIRE(seg);
  const auto bytes = seg->bytes().first(version.size());
  CHECK(std::equal(bytes.begin(), bytes.end(), version.begin()));
}

TEST_CASE("scancel: SIGTERM to every host at once, each persists its newest version and exits 0") {
  shoal::ckpt::test::ShmTestJob job("scancel");
  AgentCluster cluster;
  const std::string dir = cluster.dir() + "/ckpt";
  const std::vector<std::string> hosts = {"h1", "h2", "h3"};
  std::vector<std::string> stores;
  struct Cleanup {
    std::vector<std::string>& stores;
    ~Cleanup() {
      for (const auto& s : stores) {
        (void)shoal::ckpt::RankStore::remove_segments(s, 0);
        (void)shoal::ckpt::ReplicaStore::remove_all(s);
      }
    }
  } cleanup{stores};
  std::string seed;
  for (const auto& h : hosts) {
    stores.push_back(shoal::ckpt::store_for_host(job.name(), h));
    const auto& a = cluster.start(h, seed.empty() ? std::vector<std::string>{} : std::vector<std::string>{seed},
                                  {"--job", job.name(), "--host", h, "--ckpt-dir", dir, "--min-hosts", "3"});
    if (seed.empty()) seed = a.addr;
  }
  REQUIRE(AgentCluster::eventually(
      [&] {
        const auto v = cluster.request<shoal::control::ViewReply>("h1", "view");
        return v && v->members.size() == 3;
      },
      20s));
  // Each host's rank 0 of its own store: a version saved, the agent never told.
  std::vector<std::vector<std::byte>> versions;
  for (const auto& s : stores) versions.push_back(save(job.name(), s, 12));
  for (const auto& h : hosts) cluster[h].process->send_signal(SIGTERM);
  for (size_t i = 0; i < hosts.size(); ++i) {
    INFO(hosts[i] << "'s log:\n" << cluster.log_tail(hosts[i], 40));
    const auto code = cluster[hosts[i]].process->wait_exit(30s);
    REQUIRE(code.has_value());
    CHECK(*code == 0);
    // Each learned that the others left too, so none lingered for a view that nobody would commit.
    CHECK(cluster.log_tail(hosts[i], 200).find("left while still in the committed view") == std::string::npos);
    auto pd = shoal::ckpt::PersistDir::open({.dir = dir + "/" + hosts[i], .job = job.name()});
    REQUIRE(pd);
    auto loaded = pd->load(0, 12);
    REQUIRE_MESSAGE(loaded, loaded.error().message);
    CHECK(*loaded == versions[i]);
  }
}

TEST_CASE("an agent refuses a --ckpt-dir that others may write, saying the chmod that fixes it") {
  shoal::test::TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  fs::create_directory(dir);
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  auto r = run_command({SHOAL_BINARY, "agent", "--insecure", "--name", "x", "--bind", "127.0.0.1:0", "--control",
                        tmp.path() + "/s.sock", "--ckpt-dir", dir},
                       20s);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("chmod go-w " + dir) != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/x"));  // nothing made inside
}

TEST_CASE("planted files neither block a restarted agent nor hide its newest good version, and are counted") {
  Host host;
  host.start();
  const auto version = save(host.job.name(), host.store, 4);
  REQUIRE(host.cluster.request<shoal::control::CommittedReply>("p1", "ckpt-committed 0 4").has_value());
  REQUIRE(AgentCluster::eventually([&] { return fs::exists(host.file(4)); }, 15s));
  auto& first = host.cluster["p1"];
  first.process->send_signal(SIGTERM);
  REQUIRE(first.process->wait_exit(30s).has_value());
  // Step 6 persisted, then its data corrupted on disk: its prefix is sound, so only a load finds it out.
  const auto newer = save(host.job.name(), host.store, 6);
  {
    auto dir = shoal::ckpt::PersistDir::open({.dir = host.host_dir(), .job = host.job.name()});
    REQUIRE(dir);
    REQUIRE(dir->persist(newer));
  }
  const auto info = shoal::ckpt::decode_version(newer);
  REQUIRE(info);
  {
    std::fstream f(host.file(6), std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>(info->buffers[0].offset + 10);
    f.seekg(at);
    char c = 0;
    f.get(c);
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x5a));
    REQUIRE(f.good());
  }
  const fs::path job = fs::path(host.file(4)).parent_path();
  REQUIRE(::mkfifo((job / "r0.s9.shoalckpt").c_str(), 0600) == 0);
  fs::create_symlink(host.file(4), job / "r0.s8.shoalckpt");
  fs::copy_file(host.file(4), job / "r0.s7.shoalckpt");  // its name says 7, it holds 4
  fs::resize_file(job / "MANIFEST", shoal::ckpt::kMaxManifestBytes + 1);
  // A reboot: /dev/shm is empty, the directory is not.
  REQUIRE(shoal::ckpt::RankStore::remove_segments(host.store, 0).ok());
  REQUIRE(shoal::ckpt::ReplicaStore::remove_all(host.store).ok());

  host.start();  // fails the test when the agent does not come up within 10 s
  INFO(host.cluster.log_tail("p1", 60));
  const auto ls = host.cluster.request<shoal::control::CkptLsReply>("p1", "ckpt-ls verify");
  REQUIRE(ls.has_value());
  REQUIRE(ls->held.size() == 1);
  REQUIRE(ls->held[0].version.has_value());
  CHECK(ls->held[0].version->step == 4u);
  CHECK(ls->held[0].verified == true);
  CHECK(ls->held[0].from.value_or("").find("(disk: ") == 0);
  REQUIRE(ls->persist.has_value());
  const auto& refused = ls->persist->refused;
  CHECK(refused.not_regular >= 1);
  CHECK(refused.symlink >= 1);
  CHECK(refused.oversized >= 1);
  CHECK(refused.invalid >= 2);  // r0.s7 forged, r0.s6 corrupt
  auto seg = shoal::ckpt::ShmSegment::open_existing(ls->held[0].segment);
  REQUIRE(seg);
  const auto bytes = seg->bytes().first(version.size());
  CHECK(std::equal(bytes.begin(), bytes.end(), version.begin()));
  CHECK(fs::is_fifo(job / "r0.s9.shoalckpt"));  // refused, left where it is
}
