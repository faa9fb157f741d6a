// CRC32C in software (slicing-by-8) and with the SSE4.2 instruction, and the chunked buffer checksum
// on top: three chunks interleaved, fused with the copy for copy_with_checksum, large buffers split
// over two threads.
//
// Internally a CRC is carried as its register, the complement of the public value: crc32c(b, crc)
// is ~update(~crc, b). Chunks and the outer checksum both start from the register ~0.
#include "ckpt_shm/checksum.hpp"

#include <sched.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#define SHOAL_CRC32C_X86 1
#include <emmintrin.h>  // _mm_stream_si64 (SSE2, part of x86-64)
#include <nmmintrin.h>  // _mm_crc32_u8/u32/u64, compiled per function with target("sse4.2")
#include <xmmintrin.h>  // _mm_sfence
#endif

namespace shoal::ckpt {
namespace {

constexpr uint32_t kRegisterStart = ~uint32_t{0};
constexpr size_t K = kChecksumChunkBytes;

// At and above this size copy_with_checksum bypasses the cache, like glibc's memcpy does for copies
// larger than a good part of the last-level cache. Below it the copy is likely to be read again
// while still cached, and non-temporal stores would only evict it.
constexpr size_t kStreamingStoreBytes = size_t{8} << 20;

// ---- software ---------------------------------------------------------------------------------

// The reflected Castagnoli polynomial 0x1EDC6F41.
constexpr uint32_t kPolynomial = 0x82F63B78u;

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// tables[k][b] is the CRC of byte b followed by k zero bytes, which lets one step fold eight bytes.
constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (size_t k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  }
  return t;
}

constexpr Tables kTables = make_tables();

uint32_t load_le32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<uint32_t>(p[i]);
  return v;
}

uint32_t software_update(uint32_t c, const std::byte* p, size_t n) {
  while (n >= 8) {
    const uint32_t lo = load_le32(p) ^ c;
    const uint32_t hi = load_le32(p + 4);
    c = kTables[7][lo & 0xFFu] ^ kTables[6][(lo >> 8) & 0xFFu] ^ kTables[5][(lo >> 16) & 0xFFu] ^ kTables[4][lo >> 24] ^
        kTables[3][hi & 0xFFu] ^ kTables[2][(hi >> 8) & 0xFFu] ^ kTables[1][(hi >> 16) & 0xFFu] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ std::to_integer<uint32_t>(*p++)) & 0xFFu];
  return c;
}

// Appends a finished chunk's CRC to the outer register, as the 4 little-endian bytes it stands for.
uint32_t software_fold(uint32_t outer, uint32_t chunk_crc) {
  std::array<std::byte, 4> le{};
  for (size_t i = 0; i < 4; ++i) le[i] = std::byte(static_cast<uint8_t>(chunk_crc >> (8 * i)));
  return software_update(outer, le.data(), le.size());
}

// The CRCs of `count` whole chunks into out[0, count), each chunk copied to d first when d is set
// (the software CRC runs far below memory speed, so fusing the copy into it would gain nothing) and
// then checksummed there: the CRC is of the bytes copied, as on the fused hardware path.
void software_chunk_crcs(uint32_t* out, std::byte* d, const std::byte* s, size_t count) {
  for (size_t i = 0; i < count; ++i, s += K) {
    const std::byte* sum = s;
    if (d != nullptr) {
      std::memcpy(d, s, K);
      sum = d;
      d += K;
    }
    out[i] = ~software_update(kRegisterStart, sum, K);
  }
}

// ---- SSE4.2 -------------------------------------------------------------------------------------
#if SHOAL_CRC32C_X86

// x86 is little-endian, so an 8-byte load feeds the instruction the bytes in memory order.
uint64_t load64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <bool kStreaming>
void store64(std::byte* p, uint64_t v) {
  if constexpr (kStreaming) {
    _mm_stream_si64(reinterpret_cast<long long*>(p), static_cast<long long>(v));
  } else {
    std::memcpy(p, &v, sizeof v);
  }
}

[[gnu::target("sse4.2")]] uint32_t hardware_tail(uint32_t c, const std::byte* p, size_t n) {
  if (n >= 4) {
    c = _mm_crc32_u32(c, load_le32(p));
    p += 4;
    n -= 4;
  }
  while (n-- > 0) c = _mm_crc32_u8(c, std::to_integer<uint8_t>(*p++));
  return c;
}

[[gnu::target("sse4.2")]] uint32_t hardware_update(uint32_t c, const std::byte* p, size_t n) {
  uint64_t r = c;
  for (; n >= 8; p += 8, n -= 8) r = _mm_crc32_u64(r, load64(p));
  return hardware_tail(static_cast<uint32_t>(r), p, n);
}

[[gnu::target("sse4.2")]] uint32_t hardware_fold(uint32_t outer, uint32_t chunk_crc) {
  return _mm_crc32_u32(outer, chunk_crc);
}

// One stream: copy and checksum n bytes, 8 at a time. Used for the chunks left over after the
// three-way loop and for a buffer's last, partial chunk.
template <bool kStreaming>
[[gnu::target("sse4.2")]] uint32_t hardware_copy_update(uint32_t c, std::byte* d, const std::byte* s, size_t n) {
  uint64_t r = c;
  for (; n >= 8; s += 8, d += 8, n -= 8) {
    const uint64_t v = load64(s);
    r = _mm_crc32_u64(r, v);
    store64<kStreaming>(d, v);
  }
  std::memcpy(d, s, n);
  return hardware_tail(static_cast<uint32_t>(r), s, n);
}

// The CRCs of `count` whole chunks from s (copied to d when kCopy) into out[0, count), three chunks
// at a time as three independent dependency chains, so the crc32 unit issues every cycle instead of
// every third.
template <bool kCopy, bool kStreaming>
[[gnu::target("sse4.2")]] void hardware_chunk_crcs(uint32_t* out, std::byte* d, const std::byte* s, size_t count) {
  for (; count >= 3; count -= 3, s += 3 * K, d += kCopy ? 3 * K : 0, out += 3) {
    uint64_t a = kRegisterStart;
    uint64_t b = kRegisterStart;
    uint64_t c = kRegisterStart;
    for (size_t j = 0; j < K; j += 8) {
      const uint64_t x = load64(s + j);
      const uint64_t y = load64(s + K + j);
      const uint64_t z = load64(s + 2 * K + j);
      a = _mm_crc32_u64(a, x);
      b = _mm_crc32_u64(b, y);
      c = _mm_crc32_u64(c, z);
      if constexpr (kCopy) {
        store64<kStreaming>(d + j, x);
        store64<kStreaming>(d + K + j, y);
        store64<kStreaming>(d + 2 * K + j, z);
      }
    }
    out[0] = ~static_cast<uint32_t>(a);
    out[1] = ~static_cast<uint32_t>(b);
    out[2] = ~static_cast<uint32_t>(c);
  }
  for (; count > 0; --count, s += K, d += kCopy ? K : 0, ++out) {
    *out = ~(kCopy ? hardware_copy_update<kStreaming>(kRegisterStart, d, s, K) : hardware_update(kRegisterStart, s, K));
  }
  // Non-temporal stores are weakly ordered: without this fence a later release store (the seal), or
  // the end of a helper thread, could become visible before the data.
  if constexpr (kStreaming) _mm_sfence();
}

#endif  // SHOAL_CRC32C_X86

// ---- dispatch -----------------------------------------------------------------------------------

uint32_t update(uint32_t c, const std::byte* p, size_t n) {
#if SHOAL_CRC32C_X86
  if (crc32c_hardware_available()) return hardware_update(c, p, n);
#endif
  return software_update(c, p, n);
}

uint32_t fold(uint32_t outer, uint32_t chunk_crc) {
#if SHOAL_CRC32C_X86
  if (crc32c_hardware_available()) return hardware_fold(outer, chunk_crc);
#endif
  return software_fold(outer, chunk_crc);
}

// Chunk CRCs of whole chunks, copying them on the way when d is not null (see *_chunk_crcs).
using ChunkCrcs = void (*)(uint32_t* out, std::byte* d, const std::byte* s, size_t count);

ChunkCrcs chunk_crcs_for(bool copy, bool streaming) {
#if SHOAL_CRC32C_X86
  if (crc32c_hardware_available()) {
    if (!copy) return hardware_chunk_crcs<false, false>;
    return streaming ? hardware_chunk_crcs<true, true> : hardware_chunk_crcs<true, false>;
  }
#else
  (void)copy;
  (void)streaming;
#endif
  return software_chunk_crcs;
}

// Whether to split work over two threads: only where a second CPU can run the helper (this process
// may be pinned to fewer CPUs than the machine has), else the split would only add a thread's start
// to the same work done in turn.
bool two_cpus() {
  static const bool two = [] {
    cpu_set_t set;
    if (::sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set) >= 2;
    return std::thread::hardware_concurrency() >= 2;
  }();
  return two;
}

// Folds `count` whole chunks from s (copied to d when d is not null) into the outer register, in
// order, and writes their CRCs into values[0, count) when values is not null. From
// kParallelChecksumBytes on, the second half of the chunks goes to a helper thread: the chunks' CRCs
// are independent, so each half computes its own into `crcs`, and the outer CRC folds them in order
// afterwards, exactly as one thread would. The helper is joined before this returns.
uint32_t fold_whole_chunks(uint32_t outer, ChunkCrcs chunk_crcs, std::byte* d, const std::byte* s, size_t count,
                           uint32_t* values) {
  if (count * K >= kParallelChecksumBytes && two_cpus()) {
    std::vector<uint32_t> own;
    if (values == nullptr) own.resize(count);
    uint32_t* crcs = values != nullptr ? values : own.data();
    const size_t half = count / 2;  // the first half is the caller's; the helper takes the rest
    std::optional<std::thread> helper;
    try {
      helper.emplace(chunk_crcs, crcs + half, d == nullptr ? nullptr : d + half * K, s + half * K, count - half);
    } catch (const std::system_error&) {
      // No thread to be had (a process at its limit): the same work on this thread.
    }
    chunk_crcs(crcs, d, s, half);
    if (helper) {
      helper->join();
    } else {
      chunk_crcs(crcs + half, d == nullptr ? nullptr : d + half * K, s + half * K, count - half);
    }
    for (size_t i = 0; i < count; ++i) outer = fold(outer, crcs[i]);
    return outer;
  }
  // In batches whose CRCs fit on the stack; a multiple of 3 keeps the three-way loop whole.
  std::array<uint32_t, 48> batch{};
  while (count > 0) {
    const size_t n = count < batch.size() ? count : batch.size();
    chunk_crcs(batch.data(), d, s, n);
    for (size_t i = 0; i < n; ++i) outer = fold(outer, batch[i]);
    if (values != nullptr) {
      std::memcpy(values, batch.data(), n * sizeof(uint32_t));
      values += n;
    }
    s += n * K;
    if (d != nullptr) d += n * K;
    count -= n;
  }
  return outer;
}

}  // namespace

bool crc32c_hardware_available() {
#if SHOAL_CRC32C_X86
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
#else
  return false;
#endif
}

uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc) { return ~update(~crc, bytes.data(), bytes.size()); }

uint32_t crc32c_software(std::span<const std::byte> bytes, uint32_t crc) {
  return ~software_update(~crc, bytes.data(), bytes.size());
}

uint32_t buffer_checksum(std::span<const std::byte> bytes) {
  BufferChecksum sum;
  sum.update(bytes);
  return sum.finish();
}

void chunk_crc_values(std::span<const std::byte> src, uint32_t* out, std::byte* copy_to) {
  const size_t whole = src.size() / K;
  chunk_crcs_for(copy_to != nullptr, false)(out, copy_to, src.data(), whole);
  const size_t tail = src.size() - whole * K;
  if (tail == 0) return;
  if (copy_to == nullptr) {
    out[whole] = crc32c(src.subspan(whole * K, tail));
    return;
  }
  // The copy's own bytes: a source that changes meanwhile is caught by the check of what was copied.
  std::memcpy(copy_to + whole * K, src.data() + whole * K, tail);
  out[whole] = crc32c(std::span<const std::byte>(copy_to + whole * K, tail));
}

uint32_t copy_with_checksum(std::span<std::byte> dst, std::span<const std::byte> src, uint32_t* chunk_values) {
  // A precondition, not an input error: every caller sizes dst from the same layout as src.
  if (dst.size() != src.size()) std::abort();
  const size_t n = src.size();
  // Non-temporal stores only into whole cache lines from the start: on some CPUs (an EPYC guest
  // measured 17x) streaming into a destination that starts inside a line is far slower than caching.
  const bool streaming = n >= kStreamingStoreBytes && reinterpret_cast<uintptr_t>(dst.data()) % 64 == 0;
  const size_t whole = n / K;
  uint32_t outer =
      fold_whole_chunks(kRegisterStart, chunk_crcs_for(true, streaming), dst.data(), src.data(), whole, chunk_values);
  const size_t done = whole * K;
  if (n > done) {
    uint32_t last = 0;
#if SHOAL_CRC32C_X86
    if (crc32c_hardware_available()) {
      last = hardware_copy_update<false>(kRegisterStart, dst.data() + done, src.data() + done, n - done);
    } else
#endif
    {
      std::memcpy(dst.data() + done, src.data() + done, n - done);
      last = software_update(kRegisterStart, src.data() + done, n - done);
    }
    outer = fold(outer, ~last);
    if (chunk_values != nullptr) chunk_values[whole] = ~last;
  }
  return ~outer;  // an empty buffer has no chunks: ~~0 == 0
}

bool copy_and_verify(std::span<std::byte> dst, std::span<const std::byte> src, uint32_t expected) {
  return copy_with_checksum(dst, src) == expected;
}

void BufferChecksum::update(std::span<const std::byte> bytes) {
  const std::byte* p = bytes.data();
  size_t n = bytes.size();
  bytes_ += n;
  if (chunk_fill_ > 0) {
    const size_t take = n < K - chunk_fill_ ? n : K - chunk_fill_;
    chunk_ = shoal::ckpt::update(chunk_, p, take);
    chunk_fill_ += take;
    p += take;
    n -= take;
    if (chunk_fill_ < K) return;
    outer_ = fold(outer_, ~chunk_);
    if (values_ != nullptr) values_[chunks_] = ~chunk_;
    ++chunks_;
    chunk_ = kRegisterStart;
    chunk_fill_ = 0;
  }
  const size_t whole = n / K;
  outer_ = fold_whole_chunks(outer_, chunk_crcs_for(false, false), nullptr, p, whole,
                             values_ != nullptr ? values_ + chunks_ : nullptr);
  chunks_ += whole;
  p += whole * K;
  n -= whole * K;
  if (n > 0) {
    chunk_ = shoal::ckpt::update(kRegisterStart, p, n);
    chunk_fill_ = n;
  }
}

uint32_t BufferChecksum::finish() const {
  // A partial chunk counts; an empty one does not exist (a 64 KiB buffer has exactly one chunk).
  if (values_ != nullptr && chunk_fill_ > 0) values_[chunks_] = ~chunk_;
  return ~(chunk_fill_ > 0 ? fold(outer_, ~chunk_) : outer_);
}

}  // namespace shoal::ckpt
