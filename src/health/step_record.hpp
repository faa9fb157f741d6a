// The bytes one rank contributes to a timing exchange: the steps it measured since the previous exchange
// (compute and wait microseconds per step), in a record of fixed size so that every rank's allgather has
// the same shape whatever it measured. Decoding trusts nothing: a record with a bad header is refused
// whole, a figure out of range is dropped, and both are counted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace shoal::health {

// One step of one rank, in microseconds of a monotonic clock.
struct StepFigure {
  uint32_t compute_us = 0;  // outside collectives
  uint32_t wait_us = 0;     // inside collectives
  bool operator==(const StepFigure&) const = default;
};

// A record holds at most this many steps (StragglerOptions::exchange_every is at most this).
inline constexpr size_t kRecordSteps = 8;
// Above an hour a figure is no step's: it is dropped.
inline constexpr uint32_t kMaxFigureUs = 3'600'000'000u;
// Header (magic u32, count u16, reserved u16) and kRecordSteps slots of two u32, little-endian.
inline constexpr size_t kRecordBytes = 8 + kRecordSteps * 8;

using RecordBytes = std::array<std::byte, kRecordBytes>;

// `steps` (the first kRecordSteps of them) as a record.
RecordBytes encode_record(std::span<const StepFigure> steps);

struct DecodedRecord {
  std::vector<StepFigure> steps;  // the valid figures, in order
  bool refused = false;           // the header was not a record's: nothing in it was used
  uint32_t dropped = 0;           // figures out of range
};

// `bytes` (exactly kRecordBytes, else refused) back into figures.
DecodedRecord decode_record(std::span<const std::byte> bytes);

// Microseconds from a duration in nanoseconds, saturated just above kMaxFigureUs (so that it is dropped,
// never wrapped into a small figure). Negative durations become 0.
uint32_t figure_us(int64_t nanoseconds);

}  // namespace shoal::health
