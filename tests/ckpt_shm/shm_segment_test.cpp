// ShmSegment: names, creation, sharing between mappings, growth and unlinking.
#include "ckpt_shm/shm_segment.hpp"

#include <doctest/doctest.h>

#include <filesystem>

#include "shm_test_job.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::ShmTestJob;

TEST_CASE("segment names follow /shoal.<job>.r<rank>.v<slot> and refuse job names that could escape it") {
  auto n = slot_segment_name("llama-7b_run2", 3, 1);
  REQUIRE(n.ok());
  CHECK(*n == "/shoal.llama-7b_run2.r3.v1");
  CHECK_FALSE(slot_segment_name("", 0, 0).ok());
  CHECK_FALSE(slot_segment_name("a/b", 0, 0).ok());
  CHECK_FALSE(slot_segment_name("a.b", 0, 0).ok());
  CHECK_FALSE(slot_segment_name("..", 0, 0).ok());
  CHECK_FALSE(slot_segment_name(std::string(kMaxJobNameBytes + 1, 'j'), 0, 0).ok());
  CHECK(slot_segment_name(std::string(kMaxJobNameBytes, 'j'), 0, 0).ok());
}

TEST_CASE("an unnamed job's store carries 12 hex digits of the cluster's lineage and stays a valid name") {
  CHECK(store_for_lineage("default", 0x0123456789abcdefULL) == "default-456789abcdef");
  CHECK(store_for_lineage("default", 0) == "default");  // no lineage known: the store itself
  CHECK(store_for_lineage("default", 1) != store_for_lineage("default", 2));
  const auto longest = store_for_lineage(std::string(kMaxJobNameBytes, 'j'), 0xabcULL);
  CHECK(longest.size() == kMaxJobNameBytes);
  CHECK(longest.ends_with("-000000000abc"));
  CHECK(check_job_name(longest).ok());
}

TEST_CASE("a created segment is zero-filled, shared with a second mapping, and gone from /dev/shm once unlinked") {
  ShmTestJob job("seg");
  const std::string name = *slot_segment_name(job.name(), 0, 0);
  auto a = ShmSegment::create(name, 10000);
  REQUIRE(a.ok());
  CHECK(a->size() == 10000);
  CHECK(a->bytes()[9999] == std::byte{0});
  CHECK(std::filesystem::exists("/dev/shm" + name));
  a->bytes()[1234] = std::byte{0x5A};
  auto b = ShmSegment::open_existing(name);
  REQUIRE(b.ok());
  CHECK(b->size() == 10000);
  CHECK(b->bytes()[1234] == std::byte{0x5A});
  REQUIRE(ShmSegment::unlink(name).ok());
  CHECK_FALSE(std::filesystem::exists("/dev/shm" + name));
  // The mappings outlive the name.
  CHECK(a->bytes()[1234] == std::byte{0x5A});
  CHECK(ShmSegment::unlink(name).ok());  // unlinking again is not an error
  CHECK(job.leftovers().empty());
}

TEST_CASE("creating an existing segment fails, and opening a missing one fails naming it") {
  ShmTestJob job("seg");
  const std::string name = *slot_segment_name(job.name(), 1, 0);
  auto missing = ShmSegment::open_existing(name);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find(name) != std::string::npos);
  REQUIRE(ShmSegment::create(name, 4096).ok());
  CHECK_FALSE(ShmSegment::create(name, 4096).ok());
  CHECK(ShmSegment::open_or_create(name, 4096).ok());
  CHECK(job.remove_all() == 1);
  CHECK(job.leftovers().empty());
}

TEST_CASE("grow keeps the contents, never shrinks, and another mapping sees the new size after refresh") {
  ShmTestJob job("seg");
  const std::string name = *slot_segment_name(job.name(), 0, 1);
  auto a = ShmSegment::create(name, 4096);
  REQUIRE(a.ok());
  a->bytes()[100] = std::byte{7};
  auto b = ShmSegment::open_existing(name);
  REQUIRE(b.ok());
  REQUIRE(a->grow(3 * 4096).ok());
  CHECK(a->size() == 3 * 4096);
  CHECK(a->bytes()[100] == std::byte{7});
  a->bytes()[3 * 4096 - 1] = std::byte{9};
  REQUIRE(a->grow(4096).ok());
  CHECK(a->size() == 3 * 4096);
  CHECK(b->size() == 4096);
  REQUIRE(b->refresh().ok());
  CHECK(b->size() == 3 * 4096);
  CHECK(b->bytes()[3 * 4096 - 1] == std::byte{9});
  CHECK(job.remove_all() == 1);
}

TEST_CASE("a moved-from segment owns nothing and the moved-to one keeps the mapping") {
  ShmTestJob job("seg");
  const std::string name = *slot_segment_name(job.name(), 0, 0);
  auto a = ShmSegment::create(name, 4096);
  REQUIRE(a.ok());
  ShmSegment moved = std::move(*a);
  CHECK_FALSE(a->valid());
  REQUIRE(moved.valid());
  moved.bytes()[0] = std::byte{1};
  CHECK(moved.name() == name);
  CHECK(job.remove_all() == 1);
}
