// BlockingConn: one TCP connection driven by plain blocking calls on a thread of its own, for bulk
// transfers (checkpoint streams) that must not pass through the agent's event loop. Every call has a
// deadline and stops early when the connection's cancel flag turns true (a newer version superseded
// the one in flight, or the agent is stopping). Its socket buffers are sized for bulk streams
// (bulk_buffers.hpp).
//
// Once a keyed connection's handshake is done (set_keys), every frame is sealed both ways
// (wire/frame_cipher.hpp) and bulk bytes travel as sealed data frames of at most kMaxDataRecordBytes:
// the receiver reads a record's ciphertext straight into its destination and opens it there, so the
// cipher's own pass is all that sealing adds.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "wire/frame.hpp"
#include "wire/frame_cipher.hpp"
#include "wire/stream_handshake.hpp"

namespace shoal::net {

// The plaintext of one sealed data frame, at most, and what a receiver opens at once in the destination.
// Small enough that the two ends pipeline: the receiver opens one record on its core while the sender
// seals the next on its own, and each record stays in cache between the cipher's passes. Measured with
// shoal-bench-seal (1 GiB, AES-256-GCM, loopback): 4 MiB records moved 0.47-0.59 GB/s, 256 KiB records
// 1.06-1.08 GB/s, above the one-core bound 1/(1/TCP + 1/AEAD) of 0.82 GB/s of the same run.
inline constexpr size_t kMaxDataRecordBytes = 256u << 10;

class BlockingConn {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to numeric "ip:port" before `deadline`.
  static Result<BlockingConn> connect(const std::string& ip_port, Clock::time_point deadline);
  // Adopts a connected descriptor (closed by the destructor) and makes it blocking.
  explicit BlockingConn(int fd);
  BlockingConn() = default;
  ~BlockingConn();
  BlockingConn(BlockingConn&& other) noexcept;
  BlockingConn& operator=(BlockingConn&& other) noexcept;
  BlockingConn(const BlockingConn&) = delete;
  BlockingConn& operator=(const BlockingConn&) = delete;

  // Polled between reads and writes; may be null.
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }

  Status write_all(std::span<const std::byte> bytes, Clock::time_point deadline);
  Status read_exact(std::span<std::byte> bytes, Clock::time_point deadline);
  // At most bytes.size(), at least 1; fails on end of stream.
  Result<size_t> read_some(std::span<std::byte> bytes, Clock::time_point deadline);

  Status write_frame(uint8_t type, std::span<const std::byte> payload, Clock::time_point deadline);
  // One frame; refuses an empty one or one whose payload exceeds max_payload before reading it. The
  // payload's buffer grows as its bytes arrive (arrival_buffer.hpp). Sealed once keyed: max_payload is
  // the plaintext's limit, and a frame that does not open fails the read.
  Result<wire::Frame> read_frame(size_t max_payload, Clock::time_point deadline);

  // From now on every frame and all bulk data are sealed with the connection's keys (after the handshake
  // of blocking_open.hpp or the listener's).
  void set_keys(const wire::StreamKeys& keys);
  // The same with ciphers already in use (a connection the listener handed over after its request).
  void adopt(std::unique_ptr<wire::SealedFrames> frames) { frames_ = std::move(frames); }
  bool sealed() const { return frames_ != nullptr; }
  // The AEAD chosen by the handshake; nullopt before set_keys.
  std::optional<wire::StreamCipher> cipher() const;

  // Bulk bytes (a checkpoint's stream): as they are on an open connection, as sealed data frames once
  // keyed. A receiver reads them with read_data, whatever way the sender cut them.
  Status write_data(std::span<const std::byte> bytes, Clock::time_point deadline);
  // At most bytes.size() bulk bytes, at least 1; fails on end of stream. Keyed: when the next record
  // fits in `bytes` its ciphertext is read straight into them and opened in place; otherwise (a record
  // larger than the room given) it is opened in a buffer of its own and handed out in parts.
  Result<size_t> read_data(std::span<std::byte> bytes, Clock::time_point deadline);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  uint64_t bytes_read() const { return read_; }
  uint64_t bytes_written() const { return written_; }

 private:
  // Waits until the descriptor is ready for `events`, in slices so that the cancel flag is seen (the
  // connect's wait).
  Status wait_ready(short events, Clock::time_point deadline, const char* what);
  // Before a blocking send (SO_SNDTIMEO) or receive (SO_RCVTIMEO): fails when cancelled or past the
  // deadline, else bounds the call by the time left, at most the cancel slice.
  Result<bool> arm_timeout(int option, Clock::time_point deadline, const char* what);

  struct Armed {
    std::chrono::microseconds send{0};  // the socket's SO_SNDTIMEO as last set; 0: never set
    std::chrono::microseconds receive{0};
  };

  // Keyed data: a record opened in its own buffer, not all handed out yet.
  struct Spill {
    std::vector<std::byte> bytes;
    size_t at = 0;
  };
  Result<size_t> read_record(std::span<std::byte> bytes, Clock::time_point deadline);

  int fd_ = -1;
  const std::atomic<bool>* cancel_ = nullptr;
  uint64_t read_ = 0;
  uint64_t written_ = 0;
  Armed armed_;
  std::unique_ptr<wire::SealedFrames> frames_;  // null: plain frames and data
  std::vector<std::byte> sealing_;              // a sealed frame on its way out, reused
  Spill spill_;
};

}  // namespace shoal::net
