// The timing record's fixed little-endian layout, written and checked.
#include "health/step_record.hpp"

#include <algorithm>

namespace shoal::health {
namespace {

constexpr uint32_t kMagic = 0x31485348;  // "HSH1" little-endian: a shoal health record, layout 1

void store_u32(std::byte* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
void put_u16(std::byte* at, uint16_t v) {
  at[0] = static_cast<std::byte>(v & 0xff);
  at[1] = static_cast<std::byte>(v >> 8);
}
uint32_t load_u32(const std::byte* at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(at[i]) << (8 * i);
  return v;
}
uint16_t get_u16(const std::byte* at) {
  return static_cast<uint16_t>(static_cast<uint16_t>(at[0]) | (static_cast<uint16_t>(at[1]) << 8));
}

}  // namespace

RecordBytes encode_record(std::span<const StepFigure> steps) {
  RecordBytes out{};
  const size_t n = std::min(steps.size(), kRecordSteps);
  store_u32(out.data(), kMagic);
  put_u16(out.data() + 4, static_cast<uint16_t>(n));
  for (size_t i = 0; i < n; ++i) {
    store_u32(out.data() + 8 + i * 8, steps[i].compute_us);
    store_u32(out.data() + 12 + i * 8, steps[i].wait_us);
  }
  return out;
}

DecodedRecord decode_record(std::span<const std::byte> bytes) {
  DecodedRecord r;
  if (bytes.size() != kRecordBytes || load_u32(bytes.data()) != kMagic || get_u16(bytes.data() + 6) != 0) {
    r.refused = true;
    return r;
  }
  const uint16_t count = get_u16(bytes.data() + 4);
  if (count > kRecordSteps) {
    r.refused = true;
    return r;
  }
  for (size_t i = 0; i < count; ++i) {
    const StepFigure f{load_u32(bytes.data() + 8 + i * 8), load_u32(bytes.data() + 12 + i * 8)};
    if (f.compute_us > kMaxFigureUs || f.wait_us > kMaxFigureUs) {
      ++r.dropped;
      continue;
    }
    r.steps.push_back(f);
  }
  return r;
}

uint32_t figure_us(int64_t nanoseconds) {
  if (nanoseconds <= 0) return 0;
  const int64_t us = nanoseconds / 1000;
  return us > static_cast<int64_t>(kMaxFigureUs) ? kMaxFigureUs + 1 : static_cast<uint32_t>(us);
}

}  // namespace shoal::health
