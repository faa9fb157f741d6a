// The stream half of shoal-bench-seal: the connection cipher on one core, and checkpoint transfers to a
// real agent (a replica holder of a two-agent cluster, bench/replica_pair.hpp), keyed or open, measured the
// way shoal-bench-ckpt measures them.
#include "stream_seal_measure.hpp"

#include <sodium.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <stdexcept>

#include "base/log.hpp"
#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "net/blocking_conn.hpp"
#include "replica_pair.hpp"
#include "wire/frame_cipher.hpp"

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// User and system CPU seconds of every thread of this process so far.
double process_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// The frame size a checkpoint stream is sealed in.
constexpr size_t kRecordBytes = net::kMaxDataRecordBytes;

}  // namespace

CipherSeconds stream_cipher_seconds(wire::StreamCipher cipher, size_t bytes, int runs) {
  if (wire::init_sodium().ok() == false) throw std::runtime_error("libsodium does not initialise");
  std::array<unsigned char, wire::kStreamKeyBytes> key{};
  randombytes_buf(key.data(), key.size());
  const size_t records = (bytes + kRecordBytes - 1) / kRecordBytes;
  const size_t sealed_bytes = bytes + records * (wire::kFrameHeaderBytes + wire::kFrameTagBytes);
  std::vector<std::byte> plain(bytes, std::byte{7}), sealed(sealed_bytes, std::byte{0});  // both faulted in
  CipherSeconds out;
  for (int r = 0; r < runs; ++r) {
    wire::FrameCipher sealer(cipher, key), opener(cipher, key);
    plain[size_t(r) % bytes] = std::byte(r);
    auto t = Clock::now();
    size_t at = 0;
    for (size_t off = 0; off < bytes; off += kRecordBytes) {
      const size_t n = std::min(kRecordBytes, bytes - off);
      const size_t frame = wire::kFrameHeaderBytes + n + wire::kFrameTagBytes;
      sealer.seal(wire::type_byte(wire::FrameType::data), std::span<const std::byte>(plain).subspan(off, n),
                  std::span<std::byte>(sealed).subspan(at, frame));
      at += frame;
    }
    out.seal.push_back(since(t));
    t = Clock::now();
    at = 0;
    for (size_t off = 0; off < bytes; off += kRecordBytes) {
      const size_t n = std::min(kRecordBytes, bytes - off);
      auto* p = sealed.data() + at;
      auto ok = opener.open(
          std::span<const std::byte, wire::kFrameHeaderBytes>(p, wire::kFrameHeaderBytes),
          std::span<std::byte>(p + wire::kFrameHeaderBytes, n),
          std::span<const std::byte, wire::kFrameTagBytes>(p + wire::kFrameHeaderBytes + n, wire::kFrameTagBytes));
      if (!ok) throw std::runtime_error("a sealed frame of the cipher benchmark does not open");
      at += wire::kFrameHeaderBytes + n + wire::kFrameTagBytes;
    }
    out.open.push_back(since(t));
    if (sealed[wire::kFrameHeaderBytes + size_t(r) % bytes] != std::byte(r)) {
      throw std::runtime_error("the cipher benchmark opened other bytes than it sealed");
    }
  }
  return out;
}

TransferSeconds agent_transfer_seconds(size_t bytes, int runs, const std::string& key_file) {
  const std::string job = "sealbench" + std::to_string(::getpid()) + (key_file.empty() ? "o" : "k");
  // The peer takes pushes only from the member placement names, for that member's rank in its view.
  const ReplicaPair pair({.job = job, .key_file = key_file});
  const std::string store = pair.trainer_store();
  TransferSeconds out;
  out.cipher =
      key_file.empty()
          ? "none"
          : std::string(wire::cipher_name((wire::local_cipher_offer() & uint8_t(wire::StreamCipher::aes256gcm)) != 0
                                              ? wire::StreamCipher::aes256gcm
                                              : wire::StreamCipher::xchacha20poly1305));
  auto rs = ckpt::RankStore::open({.job = job, .rank = pair.rank(), .world = pair.world(), .store = store});
  if (!rs) throw std::runtime_error(rs.error().message);
  const auto plan = ckpt::plan_layout(std::vector<ckpt::BufferSpec>{{"state", bytes}});
  if (!plan) throw std::runtime_error(plan.error().message);
  std::vector<std::byte> state(bytes, std::byte{3});
  std::vector<std::byte> restored(plan->total_bytes, std::byte{0});  // faulted in: a trainer's live state
  const ckpt_service::TransferPeer peer = pair.to_peer();
  const ckpt_service::TransferLimits limits{.stall_timeout = std::chrono::milliseconds(60'000)};
  for (int r = 0; r < runs + 2; ++r) {
    // Two rounds fault in both save slots and both replica segments; after them memory is reused.
    const bool counted = r >= 2;
    state[size_t(r) * 64] = std::byte(r);
    auto spans = rs->begin_save(uint64_t(r) + 1, std::vector<ckpt::BufferSpec>{{"state", bytes}});
    if (!spans) throw std::runtime_error(spans.error().message);
    if (auto w = rs->write_buffer(0, state); !w) throw std::runtime_error(w.error().message);
    auto sealed = rs->commit();
    if (!sealed) throw std::runtime_error(sealed.error().message);
    auto seg = ckpt::ShmSegment::open_existing(*ckpt::slot_segment_name(store, pair.rank(), sealed->slot));
    if (!seg) throw std::runtime_error(seg.error().message);
    auto info = ckpt::decode_version(seg->bytes(), ckpt::DataCheck::skip);
    if (!info) throw std::runtime_error(info.error().detail);
    const auto version = std::span<const std::byte>(seg->bytes()).first(info->total_bytes);

    auto t = Clock::now();
    double cpu = process_cpu_s();
    auto pushed = ckpt_service::push_version(peer, version, *info, limits);
    if (!pushed || *pushed != ckpt_service::PushOutcome::stored) {
      throw std::runtime_error("push: " + (pushed ? std::string("the peer already held it") : pushed.error().message));
    }
    if (counted) {
      out.replicate.push_back(since(t));
      out.replicate_cpu.push_back(process_cpu_s() - cpu);
    }

    t = Clock::now();
    cpu = process_cpu_s();
    auto got = ckpt_service::fetch_version(
        peer, job, pair.rank(), sealed->step,
        [&](const ckpt::VersionInfo& v) -> Result<std::span<std::byte>> {
          if (restored.size() < v.total_bytes) return fail(std::string("the restore buffer is too small"));
          return std::span<std::byte>(restored).first(v.total_bytes);
        },
        limits);
    if (!got) throw std::runtime_error("fetch: " + got.error().message);
    if (counted) {
      out.restore.push_back(since(t));
      out.restore_cpu.push_back(process_cpu_s() - cpu);
    }
    const auto& b = got->buffers[0];
    if (std::memcmp(restored.data() + b.offset, state.data(), bytes) != 0) {
      throw std::runtime_error("the restored version differs from the saved one");
    }
  }
  (void)ckpt::RankStore::remove_segments(store, pair.rank());
  return out;
}

}  // namespace shoal::bench
