// Segment trust: objects named like a rank's slots or a host's replicas that another user could have put
// in /dev/shm (a 0666 squat, another user's file, a FIFO, a symlink) are refused, counted, and never
// block or get followed; the segments shoal creates itself pass.
#include "ckpt_shm/segment_trust.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/replica_names.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "shm_test_job.hpp"

using namespace shoal::ckpt;
using namespace std::chrono_literals;
using shoal::ckpt::test::ShmTestJob;

namespace {

struct stat regular(mode_t mode, uid_t uid, gid_t gid) {
  struct stat st {};
  st.st_mode = S_IFREG | mode;
  st.st_uid = uid;
  st.st_gid = gid;
  return st;
}

// A file in /dev/shm with exactly `mode`, as another program would create it.
void squat(const std::string& object, mode_t mode, size_t bytes = 8192) {
  const std::string path = "/dev/shm" + object;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, static_cast<off_t>(bytes)) == 0);
  REQUIRE(::fchmod(fd, mode) == 0);
  ::close(fd);
}

// Runs `f` on a thread and fails the test when it does not return within 5 s (a blocking open of a
// FIFO); a writer then opens the FIFO so that the thread can end.
template <class F>
void returns_promptly(F f, const std::string& fifo_path) {
  auto done = std::async(std::launch::async, f);
  const bool prompt = done.wait_for(5s) == std::future_status::ready;
  if (!prompt) {
    const int unblock = ::open(fifo_path.c_str(), O_WRONLY | O_NONBLOCK);
    if (unblock >= 0) ::close(unblock);
  }
  CHECK_MESSAGE(prompt, "blocked on the FIFO " << fifo_path);
  done.get();
}

// Seals one small version of (job, rank) in a store; returns the sealed step.
void save_one(const std::string& job, uint32_t rank, uint64_t step) {
  auto rs = RankStore::open({.job = job, .rank = rank, .world = rank + 1});
  REQUIRE(rs);
  const std::vector<BufferSpec> specs = {{"w", 4096}};
  REQUIRE(rs->begin_save(step, specs));
  REQUIRE(rs->commit());
}

}  // namespace

TEST_CASE("judge_segment: only a regular file of the expected owner with mode 0600, or 0640 to its group, passes") {
  const SegmentOwner me{1000, 1000};
  struct Row {
    struct stat st;
    std::optional<SegmentRefusal> verdict;
    const char* what;
  };
  const std::vector<Row> rows = {
      {regular(0600, 1000, 1000), std::nullopt, "0600, ours"},
      {regular(0640, 1000, 1000), std::nullopt, "0640, our group"},
      {regular(0600, 1000, 2000), std::nullopt, "0600 with a foreign group: the group cannot read it"},
      {regular(0640, 1000, 2000), SegmentRefusal::loose_mode, "0640 readable by a foreign group"},
      {regular(0660, 1000, 1000), SegmentRefusal::loose_mode, "group-writable"},
      {regular(0644, 1000, 1000), SegmentRefusal::loose_mode, "readable by others"},
      {regular(0666, 1000, 1000), SegmentRefusal::loose_mode, "the squatter's 0666"},
      {regular(0700, 1000, 1000), SegmentRefusal::loose_mode, "executable"},
      {regular(04600, 1000, 1000), SegmentRefusal::loose_mode, "set-uid"},
      {regular(0600, 0, 0), SegmentRefusal::foreign_owner, "root's file, expected uid 1000"},
      {regular(0600, 1001, 1000), SegmentRefusal::foreign_owner, "another user's file"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    CHECK(judge_segment(row.st, me) == row.verdict);
  }
  struct stat fifo = regular(0600, 1000, 1000);
  fifo.st_mode = S_IFIFO | 0600;
  CHECK(judge_segment(fifo, me) == SegmentRefusal::not_regular);
  struct stat link = regular(0777, 1000, 1000);
  link.st_mode = S_IFLNK | 0777;
  CHECK(judge_segment(link, me) == SegmentRefusal::symlink);
  struct stat dir = regular(0700, 1000, 1000);
  dir.st_mode = S_IFDIR | 0700;
  CHECK(judge_segment(dir, me) == SegmentRefusal::not_regular);
  // Root's own segments are trusted by root, as anyone's own are by them.
  CHECK(judge_segment(regular(0600, 0, 0), SegmentOwner{0, 0}) == std::nullopt);
}

TEST_CASE("a segment shoal creates is 0600 whatever the umask, and passes its own check") {
  ShmTestJob job("trust");
  const std::string name = *slot_segment_name(job.name(), 0, 0);
  const mode_t old = ::umask(0277);
  auto seg = ShmSegment::create(name, 4096);
  ::umask(old);
  REQUIRE(seg);
  struct stat st {};
  REQUIRE(::stat(("/dev/shm" + name).c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(ShmSegment::open_existing(name).ok());
}

TEST_CASE("a squatted 0666 slot is refused: not read, not written, counted, and the save says why") {
  ShmTestJob job("trust");
  const std::string slot0 = *slot_segment_name(job.name(), 0, 0);
  const std::string slot1 = *slot_segment_name(job.name(), 0, 1);
  squat(slot0, 0666);
  squat(slot1, 0666);
  const uint64_t before = refused_segments(SegmentRefusal::loose_mode);

  auto opened = ShmSegment::open_trusted(slot0);
  REQUIRE_FALSE(opened);
  CHECK(opened.error().refusal == SegmentRefusal::loose_mode);
  CHECK(opened.error().message.find("0666") != std::string::npos);

  auto rs = RankStore::open({.job = job.name(), .rank = 0});
  REQUIRE(rs);
  CHECK_FALSE(rs->newest_sealed().has_value());
  const std::vector<BufferSpec> specs = {{"w", 4096}};
  auto save = rs->begin_save(1, specs);
  REQUIRE_FALSE(save);
  CHECK(save.error().message.find("mode 0666") != std::string::npos);

  const auto held = scan_held(job.name());
  REQUIRE(held.size() == 2);
  for (const auto& h : held) {
    CHECK(h.refused == SegmentRefusal::loose_mode);
    CHECK_FALSE(h.version.has_value());
  }
  CHECK(refused_segments(SegmentRefusal::loose_mode) > before);
  // Nobody removed the squatter's files: they are not ours to delete.
  CHECK(job.leftovers().size() == 2);
}

TEST_CASE("a FIFO named like a slot or a replica is refused without blocking the scan, a reader or the store") {
  ShmTestJob job("trust");
  const std::string slot = *slot_segment_name(job.name(), 0, 0);
  const std::string replica = *replica_segment_name(job.name(), 1, 7);
  REQUIRE(::mkfifo(("/dev/shm" + slot).c_str(), 0600) == 0);
  REQUIRE(::mkfifo(("/dev/shm" + replica).c_str(), 0600) == 0);
  const uint64_t before = refused_segments(SegmentRefusal::not_regular);

  returns_promptly(
      [&] {
        const auto held = scan_held(job.name());
        REQUIRE(held.size() == 2);
        for (const auto& h : held) CHECK(h.refused == SegmentRefusal::not_regular);
      },
      "/dev/shm" + slot);
  returns_promptly(
      [&] {
        auto rs = RankStore::open({.job = job.name(), .rank = 0});
        REQUIRE(rs);
        CHECK_FALSE(rs->newest_sealed().has_value());
      },
      "/dev/shm" + slot);
  returns_promptly(
      [&] {
        auto store = ReplicaStore::open({.job = job.name(), .store = "", .keep_per_rank = 2});
        REQUIRE(store);
        CHECK(store->list().empty());
        CHECK(store->untrusted_at_open() == 1);
        CHECK(store->discarded_at_open() == 0);
        auto in = store->begin(1, 7, 8192);
        REQUIRE_FALSE(in);
        CHECK(in.error().cause == ReplicaCause::untrusted);
      },
      "/dev/shm" + replica);
  CHECK(refused_segments(SegmentRefusal::not_regular) >= before + 4);
  CHECK(std::filesystem::is_fifo("/dev/shm" + replica));  // left where it was
}

TEST_CASE("a symlink named like a slot is never followed, even to a valid version of the same job") {
  ShmTestJob job("trust");
  save_one(job.name(), 1, 42);  // a real, sealed version of rank 1...
  const std::string target = "/dev/shm" + *slot_segment_name(job.name(), 1, 0);
  const std::string link = "/dev/shm" + *slot_segment_name(job.name(), 0, 0);
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);  // ...offered as rank 0's slot through a link

  auto opened = ShmSegment::open_trusted(*slot_segment_name(job.name(), 0, 0));
  REQUIRE_FALSE(opened);
  CHECK(opened.error().refusal == SegmentRefusal::symlink);
  bool seen = false;
  for (const auto& h : scan_held(job.name())) {
    if (h.segment != *slot_segment_name(job.name(), 0, 0)) continue;
    seen = true;
    CHECK(h.refused == SegmentRefusal::symlink);
    CHECK_FALSE(h.version.has_value());
  }
  CHECK(seen);
  auto rs = RankStore::open({.job = job.name(), .rank = 0});
  REQUIRE(rs);
  CHECK_FALSE(rs->newest_sealed().has_value());
  CHECK_FALSE(read_segment_prefix(*slot_segment_name(job.name(), 0, 0)).ok());
}

TEST_CASE("a segment owned by another user is refused, also when it holds a well-formed version") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: changing a file's owner needs root");
    return;
  }
  ShmTestJob job("trust");
  save_one(job.name(), 0, 5);
  const std::string name = *slot_segment_name(job.name(), 0, 0);
  // Every segment the save left (its slot, and the other slot it may have sized ahead) changes hands.
  for (const auto& file : job.leftovers()) REQUIRE(::chown(("/dev/shm/" + file).c_str(), 54321, 54321) == 0);
  const uint64_t before = refused_segments(SegmentRefusal::foreign_owner);

  auto opened = ShmSegment::open_trusted(name);
  REQUIRE_FALSE(opened);
  CHECK(opened.error().refusal == SegmentRefusal::foreign_owner);
  CHECK(opened.error().message.find("uid 54321") != std::string::npos);
  auto rs = RankStore::open({.job = job.name(), .rank = 0});
  REQUIRE(rs);
  CHECK_FALSE(rs->newest_sealed().has_value());
  const auto held = scan_held(job.name());
  REQUIRE_FALSE(held.empty());
  for (const auto& h : held) CHECK(h.refused == SegmentRefusal::foreign_owner);
  // The same file is trusted by a caller that expects that user (the trainer's uid, when known).
  CHECK(ShmSegment::open_trusted(name, SegmentOwner{54321, 54321}).ok());
  CHECK(refused_segments(SegmentRefusal::foreign_owner) > before);
}
