// Fuzz target: checkpoint versions as they arrive from a peer's stream or are read back from disk:
// prefix_bytes, decode_prefix, decode_version and the VersionReceiver state machine.
//
// Input: [flags][core length, u16 LE][core][data]. The core is a version's header and table; it is
// zero-padded (or cut) to the prefix length its header announces, so seeds stay small although a
// prefix is at least a page. The data follows the prefix in the stream. Flags bit 0 ("reseal") also
// lays prefix and data out as a segment and seals it with seal_version, which writes every checksum:
// random tables then get past the checksums, and the stream of the sealed version must be received
// intact. Flags bits 1-7 choose the size of each read (0: whatever the receiver offers).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "ckpt_shm/version_layout.hpp"
#include "ckpt_shm/version_stream.hpp"

namespace {

using namespace shoal::ckpt;
using Bytes = std::vector<std::byte>;

// Far below kMaxPrefixBytes: enough for thousands of buffers, and fast enough to run often.
constexpr uint64_t kMaxFuzzPrefixBytes = 1u << 20;
constexpr uint64_t kMaxFuzzVersionBytes = 4u << 20;

void decode_all_ways(std::span<const std::byte> bytes) {
  (void)prefix_bytes(bytes);
  (void)decode_prefix(bytes);
  (void)decode_version(bytes, DataCheck::skip);
  (void)decode_version(bytes, DataCheck::verify);
  (void)load_state(bytes);
}

// Receives `stream` in reads of at most read_bytes; the destination once the receiver says complete.
std::optional<Bytes> receive(std::span<const std::byte> stream, size_t read_bytes) {
  VersionReceiver receiver;
  Bytes destination;
  size_t pos = 0;
  while (!receiver.complete()) {
    const auto slot = receiver.next();
    const size_t n = std::min({slot.size(), read_bytes, stream.size() - pos});
    if (n == 0) return std::nullopt;  // refused, or the stream ended early
    std::memcpy(slot.data(), stream.data() + pos, n);
    pos += n;
    auto progress = receiver.advance(n);
    if (!progress) {
      if (!receiver.failed() || !receiver.next().empty()) __builtin_trap();
      return std::nullopt;
    }
    if (*progress != VersionReceiver::Progress::need_destination) continue;
    const VersionInfo& info = receiver.info();
    if (receiver.expected() != stream_bytes(info) || info.data_offset > info.total_bytes) __builtin_trap();
    if (info.total_bytes > kMaxFuzzVersionBytes) return std::nullopt;
    destination.assign(info.total_bytes, std::byte{0});
    if (!receiver.attach(destination)) return std::nullopt;
  }
  if (receiver.received() != receiver.expected() || receiver.received() != pos) __builtin_trap();
  return destination;
}

// A version the receiver completed is a sealed version whose every buffer verifies.
VersionInfo check_received(const Bytes& destination) {
  auto decoded = decode_version(destination, DataCheck::verify);
  if (!decoded || load_state(destination) != VersionState::sealed) __builtin_trap();
  return *decoded;
}

Bytes concat(const std::vector<std::span<const std::byte>>& pieces) {
  Bytes out;
  for (const auto& p : pieces) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = std::as_bytes(std::span(data, size));
  decode_all_ways(input);
  if (size < 3) return 0;

  const bool reseal = (data[0] & 1) != 0;
  const size_t read_bytes = (data[0] >> 1) == 0 ? SIZE_MAX : static_cast<size_t>(data[0] >> 1) * 13;
  const size_t core_len = std::min<size_t>(data[1] | size_t{data[2]} << 8, size - 3);
  const auto core = input.subspan(3, core_len);
  const auto payload = input.subspan(3 + core_len);
  decode_all_ways(core);

  Bytes prefix(core.begin(), core.end());
  auto announced = prefix_bytes(core);
  if (announced) {
    if (*announced > kMaxFuzzPrefixBytes) return 0;
    prefix.resize(*announced, std::byte{0});
    decode_all_ways(prefix);
  }
  Bytes stream = prefix;
  stream.insert(stream.end(), payload.begin(), payload.end());

  if (auto got = receive(stream, read_bytes)) check_received(*got);
  if (!reseal || !announced) return 0;

  // The same bytes as a segment, sealed here: its stream must arrive whole and identical. The data
  // goes right after the prefix; the room after it covers the alignment gaps of up to
  // (prefix - header) / entry buffers, so that the payload's length is what a version's sizes can use.
  Bytes segment(3 * prefix.size() + payload.size());
  if (!begin_copied_version(segment, prefix)) __builtin_trap();
  std::copy(payload.begin(), payload.end(), segment.begin() + static_cast<std::ptrdiff_t>(prefix.size()));
  if (!seal_version(segment)) return 0;
  auto sealed = decode_version(segment, DataCheck::verify);
  if (!sealed) __builtin_trap();
  const Bytes sent = concat(stream_pieces(segment, *sealed));
  if (sent.size() != stream_bytes(*sealed)) __builtin_trap();
  auto got = receive(sent, read_bytes);
  if (!got) __builtin_trap();
  const VersionInfo received = check_received(*got);
  if (received.buffers.size() != sealed->buffers.size() || received.total_bytes != sealed->total_bytes) {
    __builtin_trap();
  }
  for (size_t i = 0; i < received.buffers.size(); ++i) {
    const auto& a = received.buffers[i];
    const auto& b = sealed->buffers[i];
    if (a.name != b.name || a.offset != b.offset || a.size != b.size || a.checksum != b.checksum ||
        (a.size > 0 && std::memcmp(got->data() + a.offset, segment.data() + b.offset, a.size) != 0)) {
      __builtin_trap();
    }
  }
  return 0;
}
