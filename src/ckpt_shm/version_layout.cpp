// Encoding and validating the on-segment version format (see version_layout.hpp for the layout).
#include "ckpt_shm/version_layout.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "ckpt_shm/checksum.hpp"
#include "ckpt_shm/shm_segment.hpp"

namespace shoal::ckpt {
namespace {

// "SHOALCKP" as stored: the first byte of the segment is 'S'.
constexpr uint64_t kMagic = 0x504B434C414F4853ull;
constexpr size_t kJobField = 96;
constexpr size_t kStateOffset = 12;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

struct Header {
  uint64_t magic;
  uint32_t format_version;
  uint32_t state;  // only ever written through std::atomic_ref (see store_state)
  char job[kJobField];
  uint32_t rank;
  uint32_t buffer_count;
  uint64_t step;
  uint64_t sequence;
  uint64_t data_offset;
  uint64_t total_bytes;
  uint32_t checksum_kind;
  uint32_t meta_checksum;
  uint32_t world;  // 0: unknown
  uint8_t reserved[92];
};
static_assert(sizeof(Header) == kHeaderBytes && std::is_trivially_copyable_v<Header>);
static_assert(offsetof(Header, state) == kStateOffset);
static_assert(static_cast<size_t>(LayoutCause::data_checksum) + 1 == kLayoutCauses);

struct Entry {
  char name[kMaxBufferNameBytes + 1];
  uint64_t offset;
  uint64_t size;
  uint32_t checksum;
  uint32_t reserved;
};
static_assert(sizeof(Entry) == kEntryBytes && std::is_trivially_copyable_v<Entry>);

using Decoded = Result<VersionInfo, LayoutError>;

Unexpected<LayoutError> refuse(LayoutCause cause, std::string detail) {
  return fail(LayoutError{cause, std::move(detail)});
}

// Rounds up, or returns kMax when that would overflow (no layout can end there, so callers refuse).
uint64_t align_up(uint64_t x, uint64_t a) { return x > kMax - (a - 1) ? kMax : (x + a - 1) / a * a; }

bool all_zero(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  return std::all_of(b, b + n, [](unsigned char c) { return c == 0; });
}

// A NUL-terminated field whose padding after the NUL is all zero; nullopt otherwise.
std::optional<std::string_view> padded_text(const char* field, size_t n) {
  const void* nul = std::memchr(field, 0, n);
  if (nul == nullptr) return std::nullopt;
  const size_t len = static_cast<size_t>(static_cast<const char*>(nul) - field);
  if (!all_zero(field + len, n - len)) return std::nullopt;
  return std::string_view(field, len);
}

std::atomic_ref<uint32_t> state_word(std::byte* segment) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(segment + kStateOffset));
}

bool state_aligned(const std::byte* segment) {
  return reinterpret_cast<uintptr_t>(segment + kStateOffset) % std::atomic_ref<uint32_t>::required_alignment == 0;
}

void store_state(std::span<std::byte> segment, VersionState s, std::memory_order order) {
  const auto v = static_cast<uint32_t>(s);
  if (state_aligned(segment.data())) {
    state_word(segment.data()).store(v, order);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // only plain buffers in tests land here
    std::memcpy(segment.data() + kStateOffset, &v, sizeof v);
  }
}

uint32_t meta_checksum(const Header& h, std::span<const std::byte> table) {
  Header copy = h;
  copy.state = 0;
  copy.meta_checksum = 0;
  return crc32c(table, crc32c(std::as_bytes(std::span(&copy, 1))));
}

bool world_fits(uint32_t world, uint32_t rank) { return world == 0 || world > rank; }

// What the header alone says about the prefix: magic, format, buffer count and the data offset that
// follows from it. Returns the data offset.
Result<uint64_t, LayoutError> check_header(const Header& h) {
  if (h.magic == 0 && h.state == 0) return refuse(LayoutCause::empty, "no version was ever written here");
  if (h.magic != kMagic) return refuse(LayoutCause::bad_magic, "not a shoal checkpoint version");
  if (h.format_version != kFormatVersion || h.checksum_kind != kChecksumChunkedCrc32c) {
    return refuse(LayoutCause::bad_format, "format " + std::to_string(h.format_version) + " checksum kind " +
                                               std::to_string(h.checksum_kind) + ", this build reads format " +
                                               std::to_string(kFormatVersion) + " with chunked CRC32C");
  }
  if (h.buffer_count == 0 || h.buffer_count > kMaxBuffers) {
    return refuse(LayoutCause::malformed, "buffer count " + std::to_string(h.buffer_count) + " out of range");
  }
  const uint64_t table_end = kHeaderBytes + uint64_t{h.buffer_count} * kEntryBytes;
  if (h.data_offset != align_up(table_end, kDataAlignment) || h.data_offset > kMaxPrefixBytes) {
    return refuse(LayoutCause::malformed, "data offset " + std::to_string(h.data_offset) + " is not canonical");
  }
  return h.data_offset;
}

// How much of the version the bytes at hand must cover: the prefix [0, data_offset) or all of it.
enum class Extent { prefix, whole };

// Everything but the state and the checksums: the header's fields and the canonical table.
Decoded parse_structure(std::span<const std::byte> seg, Header& h, Extent extent) {
  if (seg.size() < kHeaderBytes) {
    return refuse(LayoutCause::truncated, std::to_string(seg.size()) + " bytes, less than a version header");
  }
  std::memcpy(&h, seg.data(), sizeof h);
  if (auto header = check_header(h); !header) return fail(header.error());
  if (!all_zero(h.reserved, sizeof h.reserved)) return refuse(LayoutCause::malformed, "reserved header bytes set");
  auto job = padded_text(h.job, kJobField);
  if (!job || !check_job_name(*job)) return refuse(LayoutCause::malformed, "invalid job name in the header");
  if (!world_fits(h.world, h.rank)) {
    return refuse(LayoutCause::malformed,
                  "rank " + std::to_string(h.rank) + " does not fit world size " + std::to_string(h.world));
  }
  const uint64_t table_end = kHeaderBytes + uint64_t{h.buffer_count} * kEntryBytes;
  if (table_end > seg.size()) return refuse(LayoutCause::truncated, "the buffer table runs past the segment");
  if (extent == Extent::prefix && h.data_offset > seg.size()) {
    return refuse(LayoutCause::truncated,
                  "the prefix needs " + std::to_string(h.data_offset) + " bytes, got " + std::to_string(seg.size()));
  }

  VersionInfo info;
  info.id = VersionIdentity{std::string(*job), h.rank, h.step, h.sequence, h.world};
  info.data_offset = h.data_offset;
  info.buffers.reserve(h.buffer_count);
  uint64_t end = h.data_offset;
  for (uint32_t i = 0; i < h.buffer_count; ++i) {
    Entry e;
    std::memcpy(&e, seg.data() + kHeaderBytes + size_t{i} * kEntryBytes, sizeof e);
    auto name = padded_text(e.name, sizeof e.name);
    if (!name || name->empty() || e.reserved != 0) {
      return refuse(LayoutCause::malformed, "buffer " + std::to_string(i) + " has an invalid name or reserved field");
    }
    const uint64_t expected = i == 0 ? h.data_offset : align_up(end, kBufferAlignment);
    if (e.offset != expected || e.size > kMax - e.offset) {
      return refuse(LayoutCause::malformed, "buffer '" + std::string(*name) + "' has a non-canonical offset or size");
    }
    end = e.offset + e.size;
    info.buffers.push_back(BufferInfo{std::string(*name), e.offset, e.size, e.checksum});
  }
  if (h.total_bytes != end) {
    return refuse(LayoutCause::malformed,
                  "total " + std::to_string(h.total_bytes) + " bytes, the buffers end at " + std::to_string(end));
  }
  if (extent == Extent::whole && h.total_bytes > seg.size()) {
    return refuse(LayoutCause::truncated, "the version needs " + std::to_string(h.total_bytes) +
                                              " bytes, the segment has " + std::to_string(seg.size()));
  }
  std::vector<std::string_view> names;
  for (const auto& b : info.buffers) names.push_back(b.name);
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
    return refuse(LayoutCause::malformed, "duplicate buffer names");
  }
  info.total_bytes = h.total_bytes;
  return info;
}

// Structure, state and meta checksum: everything but the buffers' bytes.
Decoded check_sealed(std::span<const std::byte> seg, Header& h, Extent extent) {
  // The state is judged first: a version being written may be torn anywhere, and "unsealed" is the
  // cause a reader can act on.
  if (seg.size() >= kHeaderBytes) {
    std::memcpy(&h, seg.data(), sizeof h);
    if (h.magic == kMagic && h.state == static_cast<uint32_t>(VersionState::writing)) {
      return refuse(LayoutCause::unsealed, "step " + std::to_string(h.step) + " was begun but never sealed");
    }
  }
  auto parsed = parse_structure(seg, h, extent);
  if (!parsed) return parsed;
  if (h.state != static_cast<uint32_t>(VersionState::sealed)) {
    return refuse(LayoutCause::malformed, "state " + std::to_string(h.state) + " is neither writing nor sealed");
  }
  const auto table = seg.subspan(kHeaderBytes, parsed->buffers.size() * kEntryBytes);
  if (meta_checksum(h, table) != h.meta_checksum) {
    return refuse(LayoutCause::meta_checksum,
                  "the header or buffer table of step " + std::to_string(h.step) + " changed after it was sealed");
  }
  parsed->state = VersionState::sealed;
  return parsed;
}

}  // namespace

std::string_view name(LayoutCause c) {
  switch (c) {
    case LayoutCause::empty:
      return "empty";
    case LayoutCause::truncated:
      return "truncated";
    case LayoutCause::bad_magic:
      return "bad_magic";
    case LayoutCause::bad_format:
      return "bad_format";
    case LayoutCause::unsealed:
      return "unsealed";
    case LayoutCause::malformed:
      return "malformed";
    case LayoutCause::meta_checksum:
      return "meta_checksum";
    case LayoutCause::data_checksum:
      return "data_checksum";
  }
  return "unknown";
}

Result<LayoutPlan> plan_layout(std::span<const BufferSpec> buffers) {
  if (buffers.empty()) return fail("a checkpoint version needs at least one buffer");
  if (buffers.size() > kMaxBuffers) {
    return fail(std::to_string(buffers.size()) + " buffers, more than the " + std::to_string(kMaxBuffers) + " allowed");
  }
  std::vector<std::string_view> names;
  for (const auto& b : buffers) {
    if (b.name.empty() || b.name.size() > kMaxBufferNameBytes || b.name.find('\0') != std::string::npos) {
      return fail("buffer name '" + b.name + "' must have 1 to " + std::to_string(kMaxBufferNameBytes) +
                  " bytes and no NUL");
    }
    names.push_back(b.name);
  }
  std::sort(names.begin(), names.end());
  if (auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end()) {
    return fail("buffer name '" + std::string(*dup) + "' appears twice");
  }
  LayoutPlan plan;
  plan.data_offset = align_up(kHeaderBytes + buffers.size() * kEntryBytes, kDataAlignment);
  uint64_t end = plan.data_offset;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const uint64_t offset = i == 0 ? end : align_up(end, kBufferAlignment);
    if (offset == kMax || buffers[i].bytes > kMax - offset) return fail("buffer sizes add up past 2^64 bytes");
    plan.offsets.push_back(offset);
    end = offset + buffers[i].bytes;
  }
  plan.total_bytes = end;
  return plan;
}

Status begin_version(std::span<std::byte> segment, const VersionIdentity& id, std::span<const BufferSpec> buffers,
                     const LayoutPlan& plan) {
  if (auto ok = check_job_name(id.job); !ok) return ok;
  if (!world_fits(id.world, id.rank)) {
    return fail("rank " + std::to_string(id.rank) + " does not fit world size " + std::to_string(id.world));
  }
  if (plan.offsets.size() != buffers.size()) return fail("the layout plan does not match the buffers");
  if (segment.size() < plan.total_bytes) {
    return fail("segment of " + std::to_string(segment.size()) + " bytes cannot hold a version of " +
                std::to_string(plan.total_bytes));
  }
  // The seqlock's writer side: state first, then a release fence, so that no reader (and no crash)
  // can pair the old state with new bytes.
  store_state(segment, VersionState::writing, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);

  Header h{};
  h.magic = kMagic;
  h.format_version = kFormatVersion;
  h.state = static_cast<uint32_t>(VersionState::writing);
  std::memcpy(h.job, id.job.data(), id.job.size());
  h.rank = id.rank;
  h.buffer_count = static_cast<uint32_t>(buffers.size());
  h.step = id.step;
  h.sequence = id.sequence;
  h.data_offset = plan.data_offset;
  h.total_bytes = plan.total_bytes;
  h.checksum_kind = kChecksumChunkedCrc32c;
  h.world = id.world;
  // Everything but the state word, which belongs to the atomic stores.
  const auto* hb = reinterpret_cast<const std::byte*>(&h);
  std::memcpy(segment.data(), hb, kStateOffset);
  std::memcpy(segment.data() + kStateOffset + 4, hb + kStateOffset + 4, kHeaderBytes - kStateOffset - 4);
  for (size_t i = 0; i < buffers.size(); ++i) {
    Entry e{};
    std::memcpy(e.name, buffers[i].name.data(), buffers[i].name.size());
    e.offset = plan.offsets[i];
    e.size = buffers[i].bytes;
    std::memcpy(segment.data() + kHeaderBytes + i * kEntryBytes, &e, sizeof e);
  }
  return Ok{};
}

Status seal_version(std::span<std::byte> segment) { return seal_version(segment, {}); }

Status seal_version(std::span<std::byte> segment, std::span<const std::optional<uint32_t>> known_checksums) {
  Header h;
  auto parsed = parse_structure(segment, h, Extent::whole);
  if (!parsed) return fail("cannot seal: " + std::string(name(parsed.error().cause)) + ": " + parsed.error().detail);
  if (load_state(segment) != VersionState::writing) return fail("cannot seal: the version is not being written");
  if (!known_checksums.empty() && known_checksums.size() != parsed->buffers.size()) {
    return fail("cannot seal: " + std::to_string(known_checksums.size()) + " known checksums for " +
                std::to_string(parsed->buffers.size()) + " buffers");
  }
  for (size_t i = 0; i < parsed->buffers.size(); ++i) {
    const auto& b = parsed->buffers[i];
    const bool known = !known_checksums.empty() && known_checksums[i].has_value();
    const uint32_t crc = known ? *known_checksums[i] : buffer_checksum(segment.subspan(b.offset, b.size));
    std::memcpy(segment.data() + kHeaderBytes + i * kEntryBytes + offsetof(Entry, checksum), &crc, sizeof crc);
  }
  const auto table = segment.subspan(kHeaderBytes, parsed->buffers.size() * kEntryBytes);
  const uint32_t meta = meta_checksum(h, table);
  std::memcpy(segment.data() + offsetof(Header, meta_checksum), &meta, sizeof meta);
  // Every checksum is in place before the flip can be seen; a crash before this line leaves the
  // version unsealed.
  std::atomic_thread_fence(std::memory_order_release);
  store_state(segment, VersionState::sealed, std::memory_order_release);
  return Ok{};
}

Status begin_copied_version(std::span<std::byte> segment, std::span<const std::byte> prefix) {
  if (prefix.size() < kHeaderBytes || segment.size() < prefix.size()) {
    return fail("cannot copy a version prefix of " + std::to_string(prefix.size()) + " bytes into a segment of " +
                std::to_string(segment.size()));
  }
  // As in begin_version: the state first, so that no reader pairs an old state with new bytes.
  store_state(segment, VersionState::writing, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(segment.data(), prefix.data(), kStateOffset);
  std::memcpy(segment.data() + kStateOffset + 4, prefix.data() + kStateOffset + 4, prefix.size() - kStateOffset - 4);
  return Ok{};
}

Status mark_sealed(std::span<std::byte> segment) {
  if (load_state(segment) != VersionState::writing) return fail("cannot seal: the version is not being written");
  std::atomic_thread_fence(std::memory_order_release);
  store_state(segment, VersionState::sealed, std::memory_order_release);
  return Ok{};
}

VersionState load_state(std::span<const std::byte> segment) {
  if (segment.size() < kHeaderBytes) return VersionState::empty;
  uint32_t v = 0;
  if (state_aligned(segment.data())) {
    v = state_word(const_cast<std::byte*>(segment.data())).load(std::memory_order_acquire);
  } else {
    std::memcpy(&v, segment.data() + kStateOffset, sizeof v);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  return v <= static_cast<uint32_t>(VersionState::sealed) ? static_cast<VersionState>(v) : VersionState::empty;
}

Result<VersionInfo, LayoutError> decode_prefix(std::span<const std::byte> prefix) {
  Header h;
  return check_sealed(prefix, h, Extent::prefix);
}

Result<uint64_t, LayoutError> prefix_bytes(std::span<const std::byte> first_header) {
  if (first_header.size() < kHeaderBytes) {
    return refuse(LayoutCause::truncated, std::to_string(first_header.size()) + " bytes, less than a version header");
  }
  Header h;
  std::memcpy(&h, first_header.data(), sizeof h);
  return check_header(h);
}

Result<VersionInfo, LayoutError> decode_version(std::span<const std::byte> segment, DataCheck check) {
  Header h;
  auto parsed = check_sealed(segment, h, Extent::whole);
  if (!parsed) return parsed;
  if (check == DataCheck::verify) {
    for (const auto& b : parsed->buffers) {
      if (buffer_checksum(segment.subspan(b.offset, b.size)) != b.checksum) {
        return refuse(LayoutCause::data_checksum,
                      "buffer '" + b.name + "' of step " + std::to_string(h.step) + " fails its checksum");
      }
    }
  }
  return parsed;
}

}  // namespace shoal::ckpt
