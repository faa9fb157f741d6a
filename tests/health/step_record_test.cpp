// The timing record: what one rank sends round-trips; a bad header, a wrong size or a figure out of
// range is refused or dropped and counted, never trusted.
#include "health/step_record.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace shoal::health;

TEST_CASE("a record round-trips its steps, at most kRecordSteps of them") {
  const std::vector<StepFigure> steps = {{100000, 2000}, {0, 0}, {kMaxFigureUs, 1}};
  const auto bytes = encode_record(steps);
  const auto back = decode_record(bytes);
  CHECK_FALSE(back.refused);
  CHECK(back.dropped == 0);
  CHECK(back.steps == steps);
  std::vector<StepFigure> many(kRecordSteps + 3, StepFigure{7, 8});
  CHECK(decode_record(encode_record(many)).steps.size() == kRecordSteps);
  CHECK(decode_record(encode_record({})).steps.empty());
}

TEST_CASE("a record with a bad magic, a reserved field set, a count too large or the wrong size is refused") {
  const std::vector<StepFigure> steps = {{1, 2}};
  auto bytes = encode_record(steps);
  auto bad = bytes;
  bad[0] = std::byte{0};
  CHECK(decode_record(bad).refused);
  bad = bytes;
  bad[6] = std::byte{1};
  CHECK(decode_record(bad).refused);
  bad = bytes;
  bad[4] = std::byte{kRecordSteps + 1};
  CHECK(decode_record(bad).refused);
  CHECK(decode_record(std::span<const std::byte>(bytes).first(kRecordBytes - 1)).refused);
  const std::vector<std::byte> zeros(kRecordBytes);  // a rank that sent nothing at all
  CHECK(decode_record(zeros).refused);
}

TEST_CASE("a figure out of range is dropped and counted, the others kept") {
  const std::vector<StepFigure> steps = {{5, 5}, {kMaxFigureUs + 1, 5}, {6, 0xffffffffu}, {7, 7}};
  const auto back = decode_record(encode_record(steps));
  CHECK_FALSE(back.refused);
  CHECK(back.dropped == 2);
  CHECK(back.steps == std::vector<StepFigure>{{5, 5}, {7, 7}});
}

TEST_CASE("durations become microseconds, saturated above the bound and never negative") {
  CHECK(figure_us(-5) == 0);
  CHECK(figure_us(999) == 0);
  CHECK(figure_us(1'500'000) == 1500);
  CHECK(figure_us(int64_t{5'000'000'000'000'000}) == kMaxFigureUs + 1);
}
