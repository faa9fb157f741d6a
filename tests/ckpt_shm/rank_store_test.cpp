// RankStore in one process: saves read back byte-identical, double buffering, abandoned saves,
// corruption, growth, dropping slots and cleanup.
#include "ckpt_shm/rank_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ckpt_pattern.hpp"
#include "shm_test_job.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::fill_pattern;
using shoal::ckpt::test::has_pattern;
using shoal::ckpt::test::ShmTestJob;

namespace {

const std::vector<BufferSpec> kBuffers = {{"weights", 50000}, {"optimizer", 20000}, {"step_meta", 16}};

RankStore open_store(const ShmTestJob& job, uint32_t rank = 0, uint32_t slots = 2) {
  auto s = RankStore::open(RankStoreConfig{job.name(), rank, slots});
  REQUIRE(s.ok());
  return std::move(*s);
}

// Begins a save of `step`, fills every buffer with the step's pattern.
void begin_filled(RankStore& store, uint64_t step, const std::vector<BufferSpec>& buffers = kBuffers) {
  auto spans = store.begin_save(step, buffers);
  REQUIRE(spans.ok());
  REQUIRE(spans->size() == buffers.size());
  for (size_t i = 0; i < spans->size(); ++i) {
    CHECK((*spans)[i].name == buffers[i].name);
    CHECK((*spans)[i].bytes.size() == buffers[i].bytes);
    fill_pattern((*spans)[i].bytes, step, i);
  }
}

SealedVersion save(RankStore& store, uint64_t step, const std::vector<BufferSpec>& buffers = kBuffers) {
  begin_filled(store, step, buffers);
  auto v = store.commit();
  REQUIRE(v.ok());
  return std::move(*v);
}

bool holds_step(const SealedVersion& v, uint64_t step, const std::vector<BufferSpec>& buffers = kBuffers) {
  if (v.step != step || v.buffers.size() != buffers.size()) return false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (v.buffers[i].name != buffers[i].name || v.buffers[i].bytes.size() != buffers[i].bytes) return false;
    if (!has_pattern(v.buffers[i].bytes, step, i)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a committed save reads back byte-identical, also from a second store of the same rank") {
  ShmTestJob job("store");
  auto writer = open_store(job);
  CHECK_FALSE(writer.newest_sealed().has_value());
  const auto committed = save(writer, 10);
  CHECK(holds_step(committed, 10));
  auto reader = open_store(job);
  auto v = reader.newest_sealed();
  REQUIRE(v.has_value());
  CHECK(holds_step(*v, 10));
  REQUIRE(v->find("optimizer") != nullptr);
  CHECK(v->find("optimizer")->bytes.size() == 20000);
  CHECK(v->find("missing") == nullptr);
}

TEST_CASE("two versions are kept and the third save reuses the older one's slot") {
  ShmTestJob job("store");
  auto store = open_store(job);
  const uint32_t slot1 = save(store, 1).slot;
  const uint32_t slot2 = save(store, 2).slot;
  CHECK(slot1 != slot2);
  auto reports = store.inspect();
  REQUIRE(reports.size() == 2);
  CHECK(reports[slot1].version.ok());
  CHECK(reports[slot1].version->id.step == 1);
  CHECK(reports[slot2].version->id.step == 2);
  const auto third = save(store, 3);
  CHECK(third.slot == slot1);
  auto newest = store.newest_sealed();
  REQUIRE(newest.has_value());
  CHECK(holds_step(*newest, 3));
  CHECK(store.inspect()[slot2].version->id.step == 2);
  CHECK(job.leftovers().size() == 2);
}

TEST_CASE("a save begun but never committed is never returned, and the previous version is") {
  ShmTestJob job("store");
  auto store = open_store(job);
  save(store, 1);
  save(store, 2);
  begin_filled(store, 3);  // the "crash": no commit
  CHECK(holds_step(*store.newest_sealed(), 2));
  // Another process's view: a fresh store finds the unsealed slot and refuses it with its cause.
  auto reader = open_store(job);
  auto v = reader.newest_sealed();
  REQUIRE(v.has_value());
  CHECK(holds_step(*v, 2));
  int unsealed = 0;
  for (const auto& r : reader.inspect()) {
    if (!r.version.ok() && r.version.error().cause == LayoutCause::unsealed) ++unsealed;
  }
  CHECK(unsealed == 1);
  // The trainer restarts: its next save goes into the abandoned slot, never over step 2.
  auto restarted = open_store(job);
  const auto four = save(restarted, 4);
  CHECK(holds_step(*restarted.newest_sealed(), 4));
  CHECK(four.sequence > v->sequence);
}

TEST_CASE("the first save abandoned leaves no version at all") {
  ShmTestJob job("store");
  auto store = open_store(job);
  begin_filled(store, 1);
  store.abandon();
  CHECK_FALSE(store.saving());
  CHECK_FALSE(store.newest_sealed().has_value());
  CHECK_FALSE(store.commit().ok());
}

TEST_CASE("a corrupted byte in a sealed version is detected and the previous version returned instead") {
  ShmTestJob job("store");
  auto store = open_store(job);
  save(store, 1);
  const auto two = save(store, 2);
  // A stray write into step 2's weights, through a writable mapping of the segment.
  auto seg = ShmSegment::open_existing(*slot_segment_name(job.name(), 0, two.slot));
  REQUIRE(seg.ok());
  auto reader = open_store(job);
  REQUIRE(reader.newest_sealed()->step == 2);
  // The weights start at the first data page of the segment.
  seg->bytes()[kDataAlignment + 777] ^= std::byte{0x10};
  auto v = reader.newest_sealed();
  REQUIRE(v.has_value());
  CHECK(holds_step(*v, 1));
  CHECK(reader.refused_count(LayoutCause::data_checksum) == 1);
  CHECK(reader.refused_count(LayoutCause::unsealed) == 0);
  auto bad = reader.inspect()[two.slot].version;
  REQUIRE(bad.ok());  // inspect checks structure only
  CHECK(decode_version(std::as_const(*seg).bytes()).error().cause == LayoutCause::data_checksum);
  // A restarted writer's next save must not overwrite step 1, the only intact version left. (The
  // writer that committed step 2 trusts its own checksums until it restarts: see RankStore.)
  auto restarted = open_store(job);
  const auto three = save(restarted, 3);
  CHECK(three.slot == two.slot);
  CHECK(holds_step(*reader.newest_sealed(), 3));
}

TEST_CASE("a corrupted sole version means no version at all") {
  ShmTestJob job("store");
  auto store = open_store(job);
  const auto one = save(store, 1);
  auto seg = ShmSegment::open_existing(*slot_segment_name(job.name(), 0, one.slot));
  REQUIRE(seg.ok());
  seg->bytes()[kDataAlignment] ^= std::byte{0xFF};
  CHECK_FALSE(open_store(job).newest_sealed().has_value());
}

TEST_CASE("begin_save refuses while a save is in progress, and commit without a save fails") {
  ShmTestJob job("store");
  auto store = open_store(job);
  CHECK_FALSE(store.commit().ok());
  begin_filled(store, 1);
  CHECK(store.saving());
  auto again = store.begin_save(2, kBuffers);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().message.find("step 1") != std::string::npos);
  REQUIRE(store.commit().ok());
  CHECK_FALSE(store.saving());
  CHECK_FALSE(store.begin_save(2, std::vector<BufferSpec>{{"a", 1}, {"a", 2}}).ok());
  CHECK_FALSE(store.saving());
}

TEST_CASE("a larger save grows its slot's segment and a smaller one reuses it without shrinking") {
  ShmTestJob job("store");
  auto store = open_store(job);
  save(store, 1);
  save(store, 2);
  const std::vector<BufferSpec> big = {{"weights", 300000}};
  const auto three = save(store, 3, big);
  CHECK(holds_step(three, 3, big));
  CHECK(store.inspect()[three.slot].segment_bytes >= 300000);
  // A reader that mapped the slot before it grew remaps and reads the larger version.
  auto reader = open_store(job);
  CHECK(holds_step(*reader.newest_sealed(), 3, big));
  save(store, 4);
  const auto five = save(store, 5);
  CHECK(five.slot == three.slot);
  CHECK(store.inspect()[five.slot].segment_bytes >= 300000);
  CHECK(holds_step(*reader.newest_sealed(), 5));
}

TEST_CASE("more than two slots keep more versions, and the oldest slot is reused") {
  ShmTestJob job("store");
  auto store = open_store(job, 0, 3);
  const uint32_t s1 = save(store, 1).slot;
  save(store, 2);
  save(store, 3);
  CHECK(store.inspect().size() == 3);
  CHECK(save(store, 4).slot == s1);
}

TEST_CASE("drop_slot refuses the newest complete version and frees an older one") {
  ShmTestJob job("store");
  auto store = open_store(job);
  const auto one = save(store, 1);
  const auto two = save(store, 2);
  CHECK_FALSE(store.drop_slot(two.slot).ok());
  CHECK_FALSE(store.drop_slot(7).ok());
  REQUIRE(store.drop_slot(one.slot).ok());
  CHECK(job.leftovers().size() == 1);
  CHECK(holds_step(*store.newest_sealed(), 2));
  auto held = store.held_versions();
  REQUIRE(held.size() == 1);
  CHECK(held[0].step == 2);
  CHECK(held[0].sealed);
  CHECK(held[0].bytes >= two.total_bytes);
}

TEST_CASE("held versions feed the host budget, which never offers the newest version") {
  ShmTestJob job("store");
  auto store = open_store(job);
  save(store, 1);
  save(store, 2);
  const auto held = store.held_versions();
  REQUIRE(held.size() == 2);
  auto plan = plan_eviction(held, IncomingSave{job.name(), 1, held[0].bytes}, held[0].bytes + held[1].bytes);
  REQUIRE(plan.ok());
  REQUIRE(plan->drop.size() == 1);
  CHECK(held[plan->drop[0]].step == 1);
}

TEST_CASE("the configured world size is stored in every version and read back") {
  ShmTestJob job("store");
  auto writer = RankStore::open(RankStoreConfig{.job = job.name(), .rank = 2, .world = 6});
  REQUIRE(writer.ok());
  const auto committed = save(*writer, 5);
  CHECK(committed.world == 6);
  // One writer per rank at a time: the writer's commit readies the next slot on a thread of its own,
  // which must be done before another store of the same rank saves (CI once saw the two collide).
  writer->wait_prepared();
  auto reader = open_store(job, 2);
  auto v = reader.newest_sealed();
  REQUIRE(v.has_value());
  CHECK(v->world == 6);
  CHECK(reader.inspect()[v->slot].version->id.world == 6);
  // A store that does not know the world saves 0: unknown.
  CHECK(save(reader, 6).world == 0);
}

TEST_CASE("write_buffer copies a buffer in with its checksum, and commit seals it with the others") {
  ShmTestJob job("store");
  auto store = open_store(job);
  auto spans = store.begin_save(7, kBuffers);
  REQUIRE(spans.ok());
  // Buffers 0 and 2 through write_buffer, buffer 1 through its span.
  std::vector<std::vector<std::byte>> sources;
  for (const auto& b : kBuffers) sources.emplace_back(b.bytes);
  fill_pattern(sources[0], 7, 0);
  fill_pattern(sources[2], 7, 2);
  REQUIRE(store.write_buffer(0, sources[0]).ok());
  REQUIRE(store.write_buffer(2, sources[2]).ok());
  fill_pattern((*spans)[1].bytes, 7, 1);
  CHECK(std::memcmp((*spans)[0].bytes.data(), sources[0].data(), sources[0].size()) == 0);
  auto v = store.commit();
  REQUIRE(v.ok());
  CHECK(holds_step(*v, 7));
  // Another store verifies every data checksum from scratch.
  auto reader = open_store(job);
  auto read = reader.newest_sealed();
  REQUIRE(read.has_value());
  CHECK(holds_step(*read, 7));
}

TEST_CASE("write_buffer takes the checksum of what it copied: later writes through the span are caught") {
  ShmTestJob job("store");
  auto store = open_store(job);
  auto spans = store.begin_save(8, kBuffers);
  REQUIRE(spans.ok());
  for (size_t i = 0; i < spans->size(); ++i) fill_pattern((*spans)[i].bytes, 8, i);
  std::vector<std::byte> weights(kBuffers[0].bytes);
  fill_pattern(weights, 8, 0);
  REQUIRE(store.write_buffer(0, weights).ok());
  (*spans)[0].bytes[100] ^= std::byte{0x01};  // the caller's bug: the sealed checksum is of the copy
  REQUIRE(store.commit().ok());
  CHECK_FALSE(open_store(job).newest_sealed().has_value());
}

TEST_CASE("write_buffer refuses without a save, with an index out of range and with a size mismatch") {
  ShmTestJob job("store");
  auto store = open_store(job);
  std::vector<std::byte> bytes(kBuffers[2].bytes);
  auto none = store.write_buffer(2, bytes);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("no save") != std::string::npos);
  begin_filled(store, 9);
  auto range = store.write_buffer(3, bytes);
  REQUIRE_FALSE(range.ok());
  CHECK(range.error().message.find("out of range") != std::string::npos);
  auto size = store.write_buffer(1, bytes);
  REQUIRE_FALSE(size.ok());
  CHECK(size.error().message.find("20000 bytes, got 16") != std::string::npos);
  REQUIRE(store.write_buffer(2, bytes).ok());  // all zero: a valid step_meta of another content
  auto v = store.commit();
  REQUIRE(v.ok());
  CHECK(std::all_of(v->buffers[2].bytes.begin(), v->buffers[2].bytes.end(),
                    [](std::byte b) { return b == std::byte{0}; }));
  CHECK(open_store(job).newest_sealed().has_value());
  CHECK_FALSE(store.write_buffer(2, bytes).ok());  // the save has ended
}

TEST_CASE("open refuses fewer than two slots and job names that cannot name a segment") {
  CHECK_FALSE(RankStore::open(RankStoreConfig{.job = "job", .rank = 3, .world = 3}).ok());
  CHECK(RankStore::open(RankStoreConfig{.job = "job", .rank = 3, .world = 4}).ok());
  CHECK_FALSE(RankStore::open(RankStoreConfig{"job", 0, 1}).ok());
  CHECK_FALSE(RankStore::open(RankStoreConfig{"../etc", 0, 2}).ok());
  CHECK_FALSE(RankStore::open(RankStoreConfig{"", 0, 2}).ok());
}

TEST_CASE("remove_segments unlinks every slot of a rank and leaves nothing in /dev/shm") {
  ShmTestJob job("store");
  {
    auto r0 = open_store(job, 0);
    auto r1 = open_store(job, 1);
    save(r0, 1);
    save(r0, 2);
    save(r1, 1);
    // r1's commit readied its other slot for the next save.
    r1.wait_prepared();
    CHECK(job.leftovers().size() == 4);
  }
  // The segments outlive the stores.
  CHECK(job.leftovers().size() == 4);
  REQUIRE(RankStore::remove_segments(job.name(), 0).ok());
  CHECK(job.leftovers().size() == 2);
  REQUIRE(RankStore::remove_segments(job.name(), 1).ok());
  CHECK(job.leftovers().empty());
  CHECK(RankStore::remove_segments(job.name(), 1).ok());
}

TEST_CASE("commit readies the next slot's memory in the background, and the next save adopts it") {
  ShmTestJob job("store");
  auto store = open_store(job);
  const auto first = save(store, 1);
  store.wait_prepared();
  // The other slot exists now, as large as the version just sealed, with no version in it yet.
  const auto reports = store.inspect();
  REQUIRE(reports.size() == 2);
  const auto& other = reports[1 - first.slot];
  CHECK(other.segment_bytes >= first.total_bytes);
  CHECK_FALSE(other.version.ok());
  // The next save goes there, and the first version stays whole meanwhile.
  const auto second = save(store, 2);
  CHECK(second.slot == 1 - first.slot);
  CHECK(holds_step(*store.newest_sealed(), 2));
  CHECK(store.inspect()[first.slot].version->id.step == 1);
}

TEST_CASE("prepare before the first save readies the slot that save will use") {
  ShmTestJob job("store");
  auto store = open_store(job);
  store.prepare(1 << 20);
  store.wait_prepared();
  const auto files = job.leftovers();
  REQUIRE(files.size() == 1);
  const auto first = save(store, 1);
  CHECK(job.leftovers().size() >= 1);
  CHECK(files[0] == "shoal." + job.name() + ".r0.v" + std::to_string(first.slot));
  CHECK(store.inspect()[first.slot].segment_bytes >= (1u << 20));
}

TEST_CASE("a slot dropped while it was being prepared is not brought back by the preparation") {
  ShmTestJob job("store");
  auto store = open_store(job);
  const auto one = save(store, 1);
  save(store, 2);
  // The commit of step 2 readies slot `one` (big enough already: nothing to do) - force a preparation
  // of a larger size, then drop that slot.
  store.prepare(8 << 20);
  REQUIRE(store.drop_slot(one.slot).ok());
  store.wait_prepared();
  CHECK(job.leftovers().size() == 1);
  CHECK(holds_step(*store.newest_sealed(), 2));
  // The next save recreates the slot and seals into it.
  CHECK(save(store, 3).slot == one.slot);
  CHECK(job.leftovers().size() == 2);
}
