// The persist directory guarded like /dev/shm (persist_trust): a directory another user may write is
// refused with the command that fixes it; a link planted where shoal writes is never written through;
// files are 0600 whatever the umask; a FIFO never blocks; oversized, forged, truncated, linked, foreign
// and loose files are refused and counted by cause, and the good versions still list and load.
#include "ckpt_shm/persist_trust.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ckpt_shm/persist_dir.hpp"
#include "persist_test_dir.hpp"

using namespace shoal::ckpt;
using namespace std::chrono_literals;
using shoal::ckpt::test::kJob;
using shoal::ckpt::test::make_version;
using shoal::ckpt::test::TempDir;
namespace fs = std::filesystem;

namespace {

using Steps = std::vector<std::pair<uint32_t, uint64_t>>;

Steps listed(const PersistDir& d) {
  Steps out;
  for (const auto& v : d.list()) out.emplace_back(v.rank, v.step);
  return out;
}

PersistDir open_ok(const PersistConfig& config) {
  auto d = PersistDir::open(config);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  return std::move(*d);
}

void persist_ok(PersistDir& d, uint32_t rank, uint64_t step) {
  auto r = d.persist(make_version(kJob, rank, step));
  REQUIRE_MESSAGE(r.ok(), r.error().message);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Refusals of `cause` counted while `f` runs.
template <class F>
uint64_t refusals_during(PersistRefusal cause, F&& f) {
  const uint64_t before = refused_persisted(cause);
  f();
  return refused_persisted(cause) - before;
}

struct stat file_stat(mode_t type_and_mode, uid_t uid, off_t size = 100) {
  struct stat st {};
  st.st_mode = type_and_mode;
  st.st_uid = uid;
  st.st_size = size;
  return st;
}

// Runs `f` on a thread and returns what it returns; fails the test when it does not return within 5 s (a
// blocking open of a FIFO), then opens each of `fifos` for writing so that the thread can end. `f` makes
// no checks itself: doctest's are made on the test's own thread.
template <class F>
auto returns_promptly(F f, const std::vector<fs::path>& fifos) {
  auto done = std::async(std::launch::async, f);
  const bool prompt = done.wait_for(5s) == std::future_status::ready;
  while (done.wait_for(10ms) != std::future_status::ready) {
    for (const auto& fifo : fifos) {
      const int unblock = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (unblock >= 0) ::close(unblock);
    }
  }
  CHECK_MESSAGE(prompt, "blocked on a FIFO");
  return done.get();
}

}  // namespace

TEST_CASE("judging a directory and a file: this user's, written by no one else, files within their bound") {
  const uid_t me = 1000;
  CHECK_FALSE(judge_persist_dir(file_stat(S_IFDIR | 0700, me), me));
  CHECK_FALSE(judge_persist_dir(file_stat(S_IFDIR | 0755, me), me));
  for (const mode_t mode : {0770, 0777, 0720, 0702, 01777}) {
    CAPTURE(mode);
    CHECK(judge_persist_dir(file_stat(S_IFDIR | mode, me), me) == PersistRefusal::unsafe_directory);
  }
  CHECK(judge_persist_dir(file_stat(S_IFDIR | 0700, 0), me) == PersistRefusal::unsafe_directory);
  CHECK(judge_persist_dir(file_stat(S_IFREG | 0700, me), me) == PersistRefusal::unsafe_directory);

  CHECK_FALSE(judge_persist_file(file_stat(S_IFREG | 0600, me), me, 100));
  CHECK_FALSE(judge_persist_file(file_stat(S_IFREG | 0640, me), me, 100));  // as agents wrote them before 0600
  CHECK(judge_persist_file(file_stat(S_IFREG | 0600, me, 101), me, 100) == PersistRefusal::oversized);
  CHECK(judge_persist_file(file_stat(S_IFLNK | 0777, me), me, 100) == PersistRefusal::symlink);
  CHECK(judge_persist_file(file_stat(S_IFIFO | 0600, me), me, 100) == PersistRefusal::not_regular);
  CHECK(judge_persist_file(file_stat(S_IFREG | 0600, me + 1), me, 100) == PersistRefusal::foreign_owner);
  for (const mode_t mode : {0644, 0660, 0606, 0700, 04600, 0666}) {
    CAPTURE(mode);
    CHECK(judge_persist_file(file_stat(S_IFREG | mode, me), me, 100) == PersistRefusal::loose_mode);
  }
}

TEST_CASE("a directory others may write, or another user's, is refused with the command that fixes it") {
  TempDir dir("unsafe");
  const PersistConfig config{dir.str(), kJob, 2};
  for (const mode_t mode : {0777, 0770, 0702}) {
    CAPTURE(mode);
    REQUIRE(::chmod(dir.str().c_str(), mode) == 0);
    std::string message;
    CHECK(refusals_during(PersistRefusal::unsafe_directory, [&] {
            auto d = PersistDir::open(config);
            REQUIRE_FALSE(d.ok());
            message = d.error().message;
          }) == 1);
    CHECK(message.find("chmod go-w " + dir.str()) != std::string::npos);
  }
  REQUIRE(::chmod(dir.str().c_str(), 0700) == 0);
  { auto d = open_ok(config); }
  CHECK(mode_of(dir.job_dir()) == 0700);  // made by open, whatever the umask

  SUBCASE("the job's directory writable by its group") {
    REQUIRE(::chmod(dir.job_dir().c_str(), 0770) == 0);
    auto d = PersistDir::open(config);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message.find("chmod go-w " + dir.job_dir().string()) != std::string::npos);
  }
  SUBCASE("the job's directory a link to another directory") {
    const fs::path elsewhere = fs::path(dir.str()) / "elsewhere";
    fs::create_directory(elsewhere);
    fs::remove_all(dir.job_dir());
    fs::create_directory_symlink(elsewhere, dir.job_dir());
    auto d = PersistDir::open(config);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message.find("symbolic link") != std::string::npos);
    CHECK(fs::is_empty(elsewhere));
  }
  SUBCASE("the job's directory another user's") {
    if (::geteuid() != 0) return;  // only root can give a directory away
    REQUIRE(::chown(dir.job_dir().c_str(), 65534, static_cast<gid_t>(-1)) == 0);
    auto d = PersistDir::open(config);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message.find("chown 0 " + dir.job_dir().string()) != std::string::npos);
  }
}

TEST_CASE("a link planted where the directory writes is never written through") {
  TempDir dir("links");
  const fs::path victim = fs::path(dir.str()) / "victim";
  write_text(victim, "precious");
  auto d = open_ok({dir.str(), kJob, 2});
  // The names a writer could guess: the temporary files as they were once named, and a final name.
  fs::create_symlink(victim, dir.job_dir() / "r0.s1.shoalckpt.tmp");
  fs::create_symlink(victim, dir.job_dir() / "MANIFEST.tmp");
  fs::create_symlink(victim, dir.job_dir() / "r0.s2.shoalckpt");
  persist_ok(d, 0, 1);
  persist_ok(d, 0, 2);
  CHECK(read_text(victim) == "precious");
  CHECK(fs::is_regular_file(fs::symlink_status(dir.job_dir() / "r0.s2.shoalckpt")));  // the link replaced
  CHECK(listed(d) == Steps{{0, 1}, {0, 2}});
  auto loaded = d.load(0, 2);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message);
  CHECK(*loaded == make_version(kJob, 0, 2));
}

TEST_CASE("files and directories are 0600 and 0700 whatever the umask") {
  struct Umask {  // this process's umask for the scope, restored also when a check fails
    mode_t old;
    explicit Umask(mode_t mask) : old(::umask(mask)) {}
    ~Umask() { ::umask(old); }
  };
  for (const mode_t mask : {mode_t{0}, mode_t{022}, mode_t{0277}}) {
    CAPTURE(mask);
    TempDir dir("umask");
    {
      Umask scoped(mask);
      auto d = open_ok({(fs::path(dir.str()) / "made" / "here").string(), kJob, 2});
      persist_ok(d, 0, 1);
    }
    const fs::path made = fs::path(dir.str()) / "made";
    CHECK(mode_of(made) == 0700);
    CHECK(mode_of(made / "here" / kJob) == 0700);
    CHECK(mode_of(made / "here" / kJob / "r0.s1.shoalckpt") == 0600);
    CHECK(mode_of(made / "here" / kJob / "MANIFEST") == 0600);
  }
}

TEST_CASE("a FIFO named like a version or the manifest never blocks open, and is refused and counted") {
  TempDir dir("fifo");
  { auto d = open_ok({dir.str(), kJob, 2}); persist_ok(d, 0, 3); }
  const fs::path fifo = dir.job_dir() / "r0.s9.shoalckpt";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  SUBCASE("beside the manifest") {}
  SUBCASE("as the manifest") {
    fs::remove(dir.job_dir() / "MANIFEST");
    REQUIRE(::mkfifo((dir.job_dir() / "MANIFEST").c_str(), 0600) == 0);
  }
  const uint64_t before = refused_persisted(PersistRefusal::not_regular);
  auto d = returns_promptly([&] { return PersistDir::open({dir.str(), kJob, 2}); },
                            {fifo, dir.job_dir() / "MANIFEST"});
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  CHECK(listed(*d) == Steps{{0, 3}});
  CHECK(d->load(0, 3).ok());
  CHECK(refused_persisted(PersistRefusal::not_regular) > before);
}

TEST_CASE("an oversized manifest or version file is refused unread and counted; the good versions load") {
  TempDir dir("oversized");
  const PersistConfig config{dir.str(), kJob, 2, uint64_t{1} << 20};
  { auto d = open_ok(config); persist_ok(d, 0, 3); }
  const std::string manifest = read_text(dir.job_dir() / "MANIFEST");
  // The manifest's own lines, then NUL bytes past its bound (sparse: nothing is written).
  fs::resize_file(dir.job_dir() / "MANIFEST", kMaxManifestBytes + 1);
  write_text(dir.job_dir() / "r0.s8.shoalckpt", "");
  fs::resize_file(dir.job_dir() / "r0.s8.shoalckpt", (uint64_t{1} << 20) + 1);
  ::chmod((dir.job_dir() / "r0.s8.shoalckpt").c_str(), 0600);
  CHECK(refusals_during(PersistRefusal::oversized, [&] {
          auto d = open_ok(config);
          CHECK(listed(d) == Steps{{0, 3}});
          auto loaded = d.load(0, 3);
          REQUIRE_MESSAGE(loaded.ok(), loaded.error().message);
          CHECK(*loaded == make_version(kJob, 0, 3));
        }) == 2);
  CHECK(read_text(dir.job_dir() / "MANIFEST") == manifest);  // rewritten from the files
}

TEST_CASE("forged, truncated, linked, loose and foreign version files are refused and counted") {
  TempDir dir("forged");
  const PersistConfig config{dir.str(), kJob, 3};
  { auto d = open_ok(config); for (uint64_t step : {3, 4, 5}) persist_ok(d, 0, step); }
  const fs::path job = dir.job_dir();
  fs::copy_file(job / "r0.s3.shoalckpt", job / "r0.s8.shoalckpt");  // its name says 8, it holds 3
  fs::copy_file(job / "r0.s4.shoalckpt", job / "r0.s9.shoalckpt");
  fs::resize_file(job / "r0.s9.shoalckpt", fs::file_size(job / "r0.s4.shoalckpt") / 2);
  write_text(job / "r1.s1.shoalckpt", "not a version at all");
  ::chmod((job / "r1.s1.shoalckpt").c_str(), 0600);
  fs::create_symlink(job / "r0.s5.shoalckpt", job / "r2.s5.shoalckpt");
  fs::copy_file(job / "r0.s5.shoalckpt", job / "r0.s6.shoalckpt");
  ::chmod((job / "r0.s6.shoalckpt").c_str(), 0666);  // what no agent writes, and anyone could
  const bool root = ::geteuid() == 0;
  if (root) {
    fs::copy_file(job / "r0.s5.shoalckpt", job / "r0.s7.shoalckpt");
    REQUIRE(::chown((job / "r0.s7.shoalckpt").c_str(), 65534, static_cast<gid_t>(-1)) == 0);
  }
  SUBCASE("the manifest lost") { fs::remove(job / "MANIFEST"); }
  SUBCASE("the manifest listing a link as a version") {
    std::ofstream(job / "MANIFEST", std::ios::app)
        << "2 5 6 8 " << fs::file_size(job / "r0.s5.shoalckpt") << " r2.s5.shoalckpt\n";
  }

  const auto before = refused_persisted_counts();
  auto d = open_ok(config);
  CHECK(listed(d) == Steps{{0, 3}, {0, 4}, {0, 5}});
  const auto after = refused_persisted_counts();
  const auto delta = [&](PersistRefusal c) { return after[size_t(c)] - before[size_t(c)]; };
  CHECK(delta(PersistRefusal::invalid) == 3);  // r0.s8 forged, r0.s9 truncated, r1.s1 no version
  CHECK(delta(PersistRefusal::symlink) == 1);
  CHECK(delta(PersistRefusal::loose_mode) == 1);
  CHECK(delta(PersistRefusal::foreign_owner) == (root ? 1u : 0u));
  for (uint64_t step : {3, 4, 5}) {
    auto loaded = d.load(0, step);
    REQUIRE_MESSAGE(loaded.ok(), loaded.error().message);
    CHECK(*loaded == make_version(kJob, 0, step));
  }
  CHECK(fs::exists(job / "r0.s8.shoalckpt"));  // refused files are left where they are
}

TEST_CASE("a version whose data was forged fails its load, is counted, and gives way to the previous step") {
  TempDir dir("data");
  const PersistConfig config{dir.str(), kJob, 2};
  { auto d = open_ok(config); persist_ok(d, 0, 3); persist_ok(d, 0, 4); }
  {
    auto plan = plan_layout(shoal::ckpt::test::kBuffers);
    REQUIRE(plan.ok());
    const auto at = static_cast<std::streamoff>(plan->offsets[0] + 10);  // a byte of the first buffer
    std::fstream f(dir.job_dir() / "r0.s4.shoalckpt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(at);
    char c = 0;
    f.get(c);
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x5a));
    REQUIRE(f.good());
  }
  auto d = open_ok(config);
  REQUIRE(d.newest(0).has_value());
  CHECK(d.newest(0)->step == 4u);  // the prefix is sound: the data is read only at load
  CHECK(refusals_during(PersistRefusal::invalid, [&] {
          auto loaded = d.load(0, 4);
          REQUIRE_FALSE(loaded.ok());
          CHECK(loaded.error().message.find("data_checksum") != std::string::npos);
        }) == 1);
  REQUIRE(d.newest(0).has_value());
  CHECK(d.newest(0)->step == 3u);
  CHECK(d.load(0, 3).ok());
}
