// The device-copy path where no GPU can be used (this machine, CI): every refusal is a clear error,
// and the save in progress, the segment and the slots are unharmed by it. The copies themselves are
// exercised in the gpu suite (tests/gpu/ckpt_device_save_test.cpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ckpt_pattern.hpp"
#include "ckpt_shm/device_copy.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "shm_test_job.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::fill_pattern;
using shoal::ckpt::test::has_pattern;
using shoal::ckpt::test::ShmTestJob;

namespace {

const std::vector<BufferSpec> kBuffers = {{"weights", 40000}, {"optimizer", 9000}};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a host pointer given as device memory is refused, and the save still commits") {
  ShmTestJob job("devref");
  auto store = RankStore::open(RankStoreConfig{job.name(), 0, 2});
  REQUIRE(store.ok());
  auto spans = store->begin_save(7, kBuffers);
  REQUIRE(spans.ok());
  std::vector<std::byte> host(kBuffers[0].bytes);
  fill_pattern(host, 7, 0);

  auto refused = store->copy_from_device(0, host.data(), nullptr);
  REQUIRE_FALSE(refused.ok());
  if (device::compiled()) {
    CHECK(contains(refused.error().message, "not CUDA device memory"));
  } else {
    CHECK(contains(refused.error().message, "no CUDA runtime"));
  }
  // Out of range and no-save errors name what is wrong, also on this path.
  auto out_of_range = store->copy_from_device(5, host.data(), nullptr);
  REQUIRE_FALSE(out_of_range.ok());
  CHECK(contains(out_of_range.error().message, "out of range"));

  REQUIRE(store->write_buffer(0, host).ok());
  fill_pattern((*spans)[1].bytes, 7, 1);
  auto sealed = store->commit();
  REQUIRE(sealed.ok());
  auto newest = store->newest_sealed();
  REQUIRE(newest.has_value());
  CHECK(newest->step == 7);
  CHECK(has_pattern(newest->buffers[0].bytes, 7, 0));
  CHECK(has_pattern(newest->buffers[1].bytes, 7, 1));

  auto no_save = store->copy_from_device(0, host.data(), nullptr);
  REQUIRE_FALSE(no_save.ok());
  CHECK(contains(no_save.error().message, "no save"));
  CHECK(RankStore::remove_segments(job.name(), 0).ok());
}

TEST_CASE("page-locking a segment either succeeds and is undone, or fails with the CUDA error and changes nothing") {
  ShmTestJob job("devpin");
  auto name = slot_segment_name(job.name(), 0, 0);
  REQUIRE(name.ok());
  auto seg = ShmSegment::create(*name, 1 << 20);
  REQUIRE(seg.ok());
  fill_pattern(seg->bytes(), 3, 0);
  auto pinned = seg->pin_for_device();
  if (pinned.ok()) {  // a GPU host
    CHECK(seg->pinned_for_device());
    CHECK(seg->pin_for_device().ok());  // once per mapping
    REQUIRE(seg->grow(2 << 20).ok());   // a remap drops the registration of the old mapping
    CHECK_FALSE(seg->pinned_for_device());
  } else {
    INFO(pinned.error().message);
    CHECK(contains(pinned.error().message, "page-locking " + *name));
    CHECK(contains(pinned.error().message, device::compiled() ? "cudaHostRegister" : "no CUDA runtime"));
    CHECK_FALSE(seg->pinned_for_device());
  }
  CHECK(has_pattern(seg->bytes().first(1 << 20), 3, 0));
  CHECK(ShmSegment::unlink(*name).ok());
}
