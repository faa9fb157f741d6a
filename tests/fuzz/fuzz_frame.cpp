// Fuzz target: TCP frame reassembly (FrameReader). The first two bytes choose the payload limit and
// how the rest is cut into reads; the frames that come out must re-encode to the bytes that went in.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "wire/frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::wire;
  if (size < 2) return 0;
  const size_t max_payload = size_t{1} << (data[0] % 21);  // 1 byte .. 1 MiB
  const size_t read_bytes = size_t{data[1]} + 1;
  const auto stream = std::as_bytes(std::span(data + 2, size - 2));

  FrameReader reader(max_payload);
  std::vector<std::byte> rebuilt;
  size_t fed = 0;
  bool failed = false;
  for (size_t pos = 0; pos < stream.size() && !failed; pos += read_bytes) {
    const auto piece = stream.subspan(pos, std::min(read_bytes, stream.size() - pos));
    failed = !reader.feed(piece);
    fed += piece.size();
    while (auto frame = reader.next()) {
      if (frame->payload.size() > max_payload) __builtin_trap();
      append_frame(rebuilt, frame->type, frame->payload);
    }
  }
  // The frames are the stream's first bytes, in order; until an error, the rest is held as pending.
  if (rebuilt.size() > fed || (!rebuilt.empty() && std::memcmp(rebuilt.data(), stream.data(), rebuilt.size()) != 0)) {
    __builtin_trap();
  }
  if (!failed && rebuilt.size() + reader.pending_bytes() != fed) __builtin_trap();
  // A failed reader stays failed.
  if (failed && reader.feed({})) __builtin_trap();
  return 0;
}
