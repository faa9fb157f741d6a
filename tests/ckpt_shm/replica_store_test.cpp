// ReplicaStore against the real /dev/shm: receiving a version, refusing what is held already,
// keeping the newest replicas of each rank, discarding crashed receives, and adopting after restart.
#include "ckpt_shm/replica_store.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ckpt_pattern.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/replica_names.hpp"
#include "ckpt_shm/version_layout.hpp"
#include "shm_test_job.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::fill_pattern;
using shoal::ckpt::test::has_pattern;
using shoal::ckpt::test::ShmTestJob;

namespace {

const std::vector<BufferSpec> kBuffers = {{"weights", 30000}, {"optimizer", 9000}};

uint64_t version_bytes() {
  auto plan = plan_layout(kBuffers);
  REQUIRE(plan.ok());
  return plan->total_bytes;
}

VersionIdentity identity(const std::string& job, uint32_t rank, uint64_t step) {
  VersionIdentity id;
  id.job = job;
  id.rank = rank;
  id.step = step;
  id.sequence = step + 1;
  id.world = 8;
  return id;
}

// Writes a version of `id` into `segment` the way a receiver would: header and table, the buffers'
// bytes, then the seal (skipped when `seal` is false, as if the sender died mid-stream).
void write_version(std::span<std::byte> segment, const VersionIdentity& id, bool seal = true) {
  auto plan = plan_layout(kBuffers);
  REQUIRE(plan.ok());
  REQUIRE(segment.size() >= plan->total_bytes);
  REQUIRE(begin_version(segment, id, kBuffers, *plan).ok());
  for (size_t i = 0; i < kBuffers.size(); ++i) {
    fill_pattern(segment.subspan(plan->offsets[i], kBuffers[i].bytes), id.step, i);
  }
  if (seal) REQUIRE(seal_version(segment).ok());
}

ReplicaStore open_store(const ShmTestJob& job, uint32_t keep_per_rank = 2) {
  auto s = ReplicaStore::open(ReplicaStoreConfig{job.name(), "", keep_per_rank});
  REQUIRE(s.ok());
  return std::move(*s);
}

// Receives a complete, sealed version of (rank, step).
void receive(ReplicaStore& store, const std::string& job, uint32_t rank, uint64_t step) {
  auto in = store.begin(rank, step, version_bytes());
  REQUIRE(in.ok());
  write_version(in->bytes(), identity(job, rank, step));
  REQUIRE(store.complete(std::move(*in)).ok());
}

std::vector<std::pair<uint32_t, uint64_t>> held(const ReplicaStore& store) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const auto& r : store.list()) out.emplace_back(r.rank, r.step);
  return out;
}

bool exists(const ShmTestJob& job, uint32_t rank, uint64_t step) {
  auto object = replica_segment_name(job.name(), rank, step);
  REQUIRE(object.ok());
  const auto files = job.leftovers();
  return std::find(files.begin(), files.end(), object->substr(1)) != files.end();
}

}  // namespace

TEST_CASE("replica segment names round-trip and only the canonical spelling parses") {
  auto object = replica_segment_name("llama-7b", 3, 12000);
  REQUIRE(object.ok());
  CHECK(*object == "/shoal.llama-7b.p3.s12000");
  auto parsed = parse_replica_segment_name(*object);
  REQUIRE(parsed.has_value());
  CHECK(parsed->job == "llama-7b");
  CHECK(parsed->rank == 3);
  CHECK(parsed->step == 12000);
  CHECK(parse_replica_segment_name("shoal.j.p4294967295.s18446744073709551615").has_value());

  CHECK_FALSE(replica_segment_name("bad.job", 0, 0).ok());
  for (const char* bad : {"shoal.j.r0.v1", "shoal.j.p01.s1", "shoal.j.p1.s01", "shoal.j.p4294967296.s1",
                          "shoal.j.p1.s18446744073709551616", "shoal.j.p.s1", "shoal.j.p1.s", "shoal.j.p-1.s1",
                          "shoal.j.p1.s1.x", "shoal..p1.s1", "other.j.p1.s1", "shoal.j.p1", ""}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_replica_segment_name(bad).has_value());
  }
}

TEST_CASE("a received and sealed version is kept and reads back byte-identical") {
  ShmTestJob job("replica");
  auto store = open_store(job);
  auto in = store.begin(4, 100, version_bytes());
  REQUIRE(in.ok());
  CHECK(in->rank() == 4);
  CHECK(in->step() == 100);
  CHECK(in->bytes().size() == version_bytes());
  CHECK(store.receiving_bytes() == version_bytes());
  write_version(in->bytes(), identity(job.name(), 4, 100));
  REQUIRE(store.complete(std::move(*in)).ok());
  CHECK(store.receiving_bytes() == 0);

  auto bytes = store.find(4, 100);
  REQUIRE(bytes.has_value());
  auto info = decode_version(*bytes, DataCheck::verify);
  REQUIRE(info.ok());
  CHECK(info->id.rank == 4);
  CHECK(info->id.step == 100);
  REQUIRE(info->buffers.size() == kBuffers.size());
  for (size_t i = 0; i < kBuffers.size(); ++i) {
    CHECK(has_pattern(bytes->subspan(info->buffers[i].offset, info->buffers[i].size), 100, i));
  }
  CHECK_FALSE(store.find(4, 99).has_value());
  CHECK_FALSE(store.find(5, 100).has_value());

  const auto reports = store.list();
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].sealed);
  CHECK(reports[0].sequence == 101);
  CHECK(reports[0].world == 8);
  CHECK(reports[0].bytes == version_bytes());
  CHECK(reports[0].segment_name == *replica_segment_name(job.name(), 4, 100));
  const auto versions = store.held_versions();
  REQUIRE(versions.size() == 1);
  CHECK(versions[0].job == job.name());
  CHECK(versions[0].sealed);
  CHECK(versions[0].bytes == version_bytes());
}

TEST_CASE("a version held already, or being received, is refused with its own cause") {
  ShmTestJob job("replica");
  auto store = open_store(job);
  receive(store, job.name(), 1, 10);
  auto again = store.begin(1, 10, version_bytes());
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().cause == ReplicaCause::already_held);
  CHECK(store.refused_count(ReplicaCause::already_held) == 1);
  CHECK(store.find(1, 10).has_value());  // the refusal left the held replica alone

  auto first = store.begin(1, 11, version_bytes());
  REQUIRE(first.ok());
  auto second = store.begin(1, 11, version_bytes());
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().cause == ReplicaCause::receiving);
  const auto reports = store.list();
  REQUIRE(reports.size() == 2);
  CHECK_FALSE(reports[1].sealed);
  CHECK(store.held_versions().size() == 1);  // receives in progress are not offered for eviction

  CHECK_FALSE(store.begin(1, 12, 16).ok());  // too small for a header
  CHECK(store.refused_count(ReplicaCause::bad_request) == 1);
}

TEST_CASE("a sealed replica that appeared in /dev/shm since open is adopted and refused as held") {
  ShmTestJob job("replica");
  auto store = open_store(job);
  auto other = open_store(job);  // stands in for an earlier agent that finished this receive
  receive(other, job.name(), 2, 7);
  auto in = store.begin(2, 7, version_bytes());
  REQUIRE_FALSE(in.ok());
  CHECK(in.error().cause == ReplicaCause::already_held);
  CHECK(store.find(2, 7).has_value());
}

TEST_CASE("receives that crashed are unlinked at open and counted") {
  ShmTestJob job("replica");
  auto make = [&](uint32_t rank, uint64_t step) {
    auto seg = ShmSegment::create(*replica_segment_name(job.name(), rank, step), version_bytes());
    REQUIRE(seg.ok());
    return std::move(*seg);
  };
  {
    auto unsealed = make(0, 1);
    write_version(unsealed.bytes(), identity(job.name(), 0, 1), false);
    auto zero = make(0, 2);  // created, never written
    auto misnamed = make(0, 3);
    write_version(misnamed.bytes(), identity(job.name(), 1, 3));
    auto good = make(0, 4);
    write_version(good.bytes(), identity(job.name(), 0, 4));
  }
  auto local = ShmSegment::create(*slot_segment_name(job.name(), 0, 0), 4096);  // a local slot: not a replica
  REQUIRE(local.ok());
  REQUIRE(job.leftovers().size() == 5);

  auto store = open_store(job);
  CHECK(store.discarded_at_open() == 3);
  CHECK(held(store) == std::vector<std::pair<uint32_t, uint64_t>>{{0, 4}});
  CHECK_FALSE(exists(job, 0, 1));
  CHECK_FALSE(exists(job, 0, 2));
  CHECK_FALSE(exists(job, 0, 3));
  CHECK(job.leftovers().size() == 2);
}

TEST_CASE("an unsealed leftover of the same version is replaced by a new receive") {
  ShmTestJob job("replica");
  auto store = open_store(job);
  {
    auto seg = ShmSegment::create(*replica_segment_name(job.name(), 3, 5), 8192);
    REQUIRE(seg.ok());
  }
  auto in = store.begin(3, 5, version_bytes());
  REQUIRE(in.ok());
  CHECK(in->bytes().size() == version_bytes());
  write_version(in->bytes(), identity(job.name(), 3, 5));
  CHECK(store.complete(std::move(*in)).ok());
}

TEST_CASE("keep_per_rank keeps the newest steps of each rank and refuses older ones") {
  ShmTestJob job("replica");
  auto store = open_store(job, 2);
  receive(store, job.name(), 0, 20);
  receive(store, job.name(), 0, 10);
  receive(store, job.name(), 1, 5);
  receive(store, job.name(), 0, 30);
  using Held = std::vector<std::pair<uint32_t, uint64_t>>;
  CHECK(held(store) == Held{{0, 20}, {0, 30}, {1, 5}});
  CHECK_FALSE(exists(job, 0, 10));
  CHECK(exists(job, 0, 20));

  auto old = store.begin(0, 15, version_bytes());
  REQUIRE_FALSE(old.ok());
  CHECK(old.error().cause == ReplicaCause::superseded);
  CHECK_FALSE(exists(job, 0, 15));
  receive(store, job.name(), 0, 25);  // newer than one kept: the oldest goes
  CHECK(held(store) == Held{{0, 25}, {0, 30}, {1, 5}});

  auto one = open_store(job, 1);  // a lower keep_per_rank applies at open
  CHECK(held(one) == Held{{0, 30}, {1, 5}});
  CHECK_FALSE(exists(job, 0, 25));
}

TEST_CASE("an abandoned receive leaves nothing behind, also when the Incoming is just destroyed") {
  ShmTestJob job("replica");
  auto store = open_store(job);
  {
    auto in = store.begin(0, 1, version_bytes());
    REQUIRE(in.ok());
    CHECK(exists(job, 0, 1));
    store.abandon(std::move(*in));
    CHECK_FALSE(exists(job, 0, 1));
    CHECK_FALSE(in->active());
  }
  {
    auto in = store.begin(0, 2, version_bytes());
    REQUIRE(in.ok());
    write_version(in->bytes(), identity(job.name(), 0, 2));  // sealed, but never completed
  }
  CHECK_FALSE(exists(job, 0, 2));
  CHECK(store.list().empty());
  {
    auto a = store.begin(0, 3, version_bytes());
    auto b = store.begin(0, 4, version_bytes());
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    *a = std::move(*b);  // assigning over a receive abandons it
    CHECK_FALSE(exists(job, 0, 3));
    CHECK(exists(job, 0, 4));
    CHECK(a->step() == 4);
    CHECK(store.receiving_bytes() == version_bytes());
  }
  CHECK(job.leftovers().empty());
  CHECK(store.receiving_bytes() == 0);
  // The version can be received again after an abandon.
  receive(store, job.name(), 0, 1);
}

TEST_CASE("an Incoming that outlives its store still cleans up") {
  ShmTestJob job("replica");
  Incoming in;
  {
    auto store = open_store(job);
    auto begun = store.begin(0, 1, version_bytes());
    REQUIRE(begun.ok());
    in = std::move(*begun);
  }
  CHECK(exists(job, 0, 1));
  in = Incoming{};
  CHECK_FALSE(exists(job, 0, 1));
}

TEST_CASE("complete refuses a version of another identity, or an unsealed one, and removes it") {
  ShmTestJob job("replica");
  auto store = open_store(job);
  auto in = store.begin(4, 9, version_bytes());
  REQUIRE(in.ok());
  write_version(in->bytes(), identity(job.name(), 5, 9));
  auto done = store.complete(std::move(*in));
  REQUIRE_FALSE(done.ok());
  CHECK(done.error().message.find("rank 5") != std::string::npos);
  CHECK(store.refused_count(ReplicaCause::wrong_identity) == 1);
  CHECK_FALSE(exists(job, 4, 9));

  auto step = store.begin(4, 9, version_bytes());
  REQUIRE(step.ok());
  write_version(step->bytes(), identity(job.name(), 4, 8));
  CHECK_FALSE(store.complete(std::move(*step)).ok());
  CHECK(store.refused_count(ReplicaCause::wrong_identity) == 2);

  auto unsealed = store.begin(4, 9, version_bytes());
  REQUIRE(unsealed.ok());
  write_version(unsealed->bytes(), identity(job.name(), 4, 9), false);
  CHECK_FALSE(store.complete(std::move(*unsealed)).ok());
  CHECK(store.refused_count(ReplicaCause::bad_version) == 1);
  CHECK(job.leftovers().empty());
  CHECK(store.list().empty());

  CHECK_FALSE(store.complete(Incoming{}).ok());  // nothing to complete
  auto other = open_store(job);
  auto foreign = other.begin(1, 1, version_bytes());
  REQUIRE(foreign.ok());
  CHECK_FALSE(store.complete(std::move(*foreign)).ok());
}

TEST_CASE("a reopened store lists the same replicas and finds their bytes") {
  ShmTestJob job("replica");
  std::vector<ReplicaReport> before;
  {
    auto store = open_store(job);
    receive(store, job.name(), 0, 10);
    receive(store, job.name(), 0, 20);
    receive(store, job.name(), 7, 20);
    before = store.list();
  }
  REQUIRE(before.size() == 3);
  auto store = open_store(job);
  CHECK(store.discarded_at_open() == 0);
  const auto after = store.list();
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].rank == before[i].rank);
    CHECK(after[i].step == before[i].step);
    CHECK(after[i].world == 8);
    CHECK(after[i].bytes == before[i].bytes);
    CHECK(after[i].sealed);
    CHECK(after[i].segment_name == before[i].segment_name);
    CHECK(after[i].sequence == before[i].sequence);
  }
  auto bytes = store.find(7, 20);
  REQUIRE(bytes.has_value());
  CHECK(decode_version(*bytes, DataCheck::verify).ok());
}

TEST_CASE("drop and remove_all unlink replicas and leave local slots alone") {
  ShmTestJob job("replica");
  auto store = open_store(job);
  receive(store, job.name(), 0, 10);
  receive(store, job.name(), 1, 10);
  CHECK(store.drop(0, 10).ok());
  CHECK_FALSE(store.find(0, 10).has_value());
  CHECK_FALSE(exists(job, 0, 10));
  CHECK(store.drop(0, 10).ok());  // nothing left: still Ok

  auto in = store.begin(2, 1, version_bytes());
  REQUIRE(in.ok());
  CHECK_FALSE(store.drop(2, 1).ok());  // being received

  auto local = ShmSegment::create(*slot_segment_name(job.name(), 0, 1), 4096);
  REQUIRE(local.ok());
  CHECK(ReplicaStore::remove_all(job.name()).ok());
  const auto files = job.leftovers();
  REQUIRE(files.size() == 1);
  CHECK(files[0] == slot_segment_name(job.name(), 0, 1)->substr(1));
  CHECK_FALSE(ReplicaStore::remove_all("bad/job").ok());
}

TEST_CASE("hosts sharing a machine keep the same job's replicas apart by store name") {
  ShmTestJob job("replica");
  ShmTestJob other_host("replica");
  auto a = open_store(job);
  auto b_opened = ReplicaStore::open(ReplicaStoreConfig{job.name(), other_host.name(), 2});
  REQUIRE(b_opened.ok());
  auto& b = *b_opened;
  receive(a, job.name(), 0, 1);
  receive(b, job.name(), 0, 1);  // the versions name the job; the segments name the store
  CHECK(job.leftovers().size() == 1);
  REQUIRE(other_host.leftovers().size() == 1);
  CHECK(other_host.leftovers()[0] == replica_segment_name(other_host.name(), 0, 1)->substr(1));
  CHECK(b.list().at(0).segment_name == *replica_segment_name(other_host.name(), 0, 1));
  CHECK(ReplicaStore::remove_all(other_host.name()).ok());
  CHECK(job.leftovers().size() == 1);
  CHECK(other_host.leftovers().empty());
}

TEST_CASE("open refuses a bad job or store name, or keep_per_rank 0") {
  CHECK_FALSE(ReplicaStore::open(ReplicaStoreConfig{"a.b", "", 2}).ok());
  CHECK_FALSE(ReplicaStore::open(ReplicaStoreConfig{"ok", "a/b", 2}).ok());
  CHECK_FALSE(ReplicaStore::open(ReplicaStoreConfig{"ok", "", 0}).ok());
}

namespace {

ino_t inode_of(const std::string& object) {
  struct stat st {};
  REQUIRE(::stat(("/dev/shm" + object).c_str(), &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("with keep_per_rank 1 the only replica stays intact while the next one arrives") {
  ShmTestJob job("spare");
  auto store = open_store(job, 1);
  receive(store, job.name(), 3, 10);
  auto in = store.begin(3, 11, version_bytes());
  REQUIRE(in.ok());
  // Step 10 is still held, whole and sealed, while step 11 is written.
  write_version(in->bytes(), identity(job.name(), 3, 11), false);
  auto old = store.find(3, 10);
  REQUIRE(old.has_value());
  auto info = decode_version(*old, DataCheck::verify);
  REQUIRE(info.ok());
  CHECK(info->id.step == 10);
  // A receive cut short leaves step 10 as it was.
  store.abandon(std::move(*in));
  CHECK(held(store) == std::vector<std::pair<uint32_t, uint64_t>>{{3, 10}});
  CHECK(decode_version(*store.find(3, 10), DataCheck::verify).ok());
  receive(store, job.name(), 3, 11);
  CHECK(held(store) == std::vector<std::pair<uint32_t, uint64_t>>{{3, 11}});
}

TEST_CASE("a dropped replica's memory becomes the rank's spare and the next receive reuses it") {
  ShmTestJob job("spare");
  auto store = open_store(job, 1);
  receive(store, job.name(), 2, 5);
  const auto first = replica_segment_name(job.name(), 2, 5);
  REQUIRE(first.ok());
  const ino_t memory = inode_of(*first);
  receive(store, job.name(), 2, 6);  // step 5 dropped: its segment is kept as the spare
  const auto spare = spare_segment_name(job.name(), 2);
  REQUIRE(spare.ok());
  CHECK(inode_of(*spare) == memory);
  CHECK(store.spare_bytes(2) >= version_bytes());
  CHECK_FALSE(store.find(2, 5).has_value());
  CHECK(store.list().size() == 1);   // a spare is no version: not listed
  receive(store, job.name(), 2, 7);  // written into the spare; step 6 becomes the spare
  const auto third = replica_segment_name(job.name(), 2, 7);
  REQUIRE(third.ok());
  CHECK(inode_of(*third) == memory);
  CHECK(decode_version(*store.find(2, 7), DataCheck::verify).ok());
  CHECK(store.spare_bytes() == store.spare_bytes(2));
}

TEST_CASE("spares are unlinked when the store closes, at open, by remove_all and by drop_spares") {
  ShmTestJob job("spare");
  const auto spare = spare_segment_name(job.name(), 1);
  REQUIRE(spare.ok());
  const auto spare_exists = [&] {
    const auto files = job.leftovers();
    return std::find(files.begin(), files.end(), spare->substr(1)) != files.end();
  };
  {
    auto store = open_store(job, 1);
    receive(store, job.name(), 1, 1);
    receive(store, job.name(), 1, 2);
    CHECK(spare_exists());
    CHECK(store.drop_spares(1) == 0);  // the rank kept
    CHECK(spare_exists());
    CHECK(store.drop_spares() >= version_bytes());
    CHECK_FALSE(spare_exists());
    receive(store, job.name(), 1, 3);
    CHECK(spare_exists());
  }
  CHECK_FALSE(spare_exists());  // the store closed
  CHECK(exists(job, 1, 3));     // its replica stays for the next agent
  // A spare left by an agent that was killed: the next open removes it, and so does remove_all.
  REQUIRE(ShmSegment::create(*spare, 4096).ok());
  { auto store = open_store(job, 1); }
  CHECK_FALSE(spare_exists());
  REQUIRE(ShmSegment::create(*spare, 4096).ok());
  REQUIRE(ReplicaStore::remove_all(job.name()).ok());
  CHECK_FALSE(spare_exists());
  CHECK(job.leftovers().empty());
}

TEST_CASE("spare names are recognised exactly and never parse as replicas") {
  CHECK(*spare_segment_name("job-1", 4) == "/shoal.job-1.p4.spare");
  CHECK(is_spare_segment_name("shoal.job-1.p4.spare", "job-1"));
  CHECK(is_spare_segment_name("/shoal.job-1.p4.spare", "job-1"));
  CHECK_FALSE(is_spare_segment_name("shoal.job-1.p04.spare", "job-1"));
  CHECK_FALSE(is_spare_segment_name("shoal.job-1.p4.spare", "job-2"));
  CHECK_FALSE(is_spare_segment_name("shoal.job-1.p4.s7", "job-1"));
  CHECK_FALSE(is_spare_segment_name("shoal.job-1.p.spare", "job-1"));
  CHECK_FALSE(parse_replica_segment_name("shoal.job-1.p4.spare").has_value());
}
