// Blocking socket I/O with deadlines and cancellation, for transfers that run on their own threads.
#include "net/blocking_conn.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/tcp_backoff.hpp"
#include "net/arrival_buffer.hpp"
#include "net/bulk_buffers.hpp"
#include "net/host_port.hpp"

namespace shoal::net {
namespace {

// How often a blocked call looks at the cancel flag.
constexpr std::chrono::milliseconds kCancelSlice{100};

std::string errno_text(int err) { return std::strerror(err); }

timeval to_timeval(std::chrono::microseconds us) {
  return timeval{.tv_sec = static_cast<time_t>(us.count() / 1'000'000),
                 .tv_usec = static_cast<suseconds_t>(us.count() % 1'000'000)};
}

}  // namespace

BlockingConn::BlockingConn(int fd) : fd_(fd) {
  // Blocking underneath, with every send and receive bounded by a socket timeout of at most
  // kCancelSlice (arm_timeout), so a stalled peer or a cancel never leaves a thread stuck for longer
  // than that. Why not non-blocking calls and poll: a receiver that keeps up with the stream drains the
  // socket at nearly every read, and each time paid a failed call and a poll before the next read; one
  // blocking call per piece costs less CPU, which a 2-core host moving a checkpoint over loopback (or
  // verifying it as it arrives) does not have to spare.
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) != 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  // Connected by now (also in connect(), which adopts its socket after the handshake): only growing
  // buffers, which the window scale chosen in the handshake already allows for.
  size_for_bulk(fd_, peer_is_loopback(fd_));
}

BlockingConn::~BlockingConn() {
  if (fd_ >= 0) ::close(fd_);
}

BlockingConn::BlockingConn(BlockingConn&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      cancel_(other.cancel_),
      read_(other.read_),
      written_(other.written_),
      armed_(other.armed_),
      frames_(std::move(other.frames_)),
      sealing_(std::move(other.sealing_)),
      spill_(std::move(other.spill_)) {}

BlockingConn& BlockingConn::operator=(BlockingConn&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    cancel_ = other.cancel_;
    read_ = other.read_;
    written_ = other.written_;
    armed_ = other.armed_;
    frames_ = std::move(other.frames_);
    sealing_ = std::move(other.sealing_);
    spill_ = std::move(other.spill_);
  }
  return *this;
}

Result<BlockingConn> BlockingConn::connect(const std::string& ip_port, Clock::time_point deadline) {
  const auto target = parse_ip_port(ip_port);
  if (!target) return fail("'" + ip_port + "' is not a numeric ip:port");
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (target->ip.is_v4()) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(target->port);
    const auto b = target->ip.to_v4().to_bytes();
    std::memcpy(&a->sin_addr, b.data(), b.size());
    len = sizeof(sockaddr_in);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(target->port);
    const auto b = target->ip.to_v6().to_bytes();
    std::memcpy(&a->sin6_addr, b.data(), b.size());
    len = sizeof(sockaddr_in6);
  }
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail("socket: " + errno_text(errno));
  net::cap_retransmission_backoff(fd);  // before connect: SYN retransmissions too
  // Non-blocking for the connect only, so that its wait has the deadline.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    if (errno != EINPROGRESS) {
      const int err = errno;
      ::close(fd);
      return fail("connect to " + ip_port + ": " + errno_text(err));
    }
    BlockingConn waiting;
    waiting.fd_ = fd;
    if (auto ready = waiting.wait_ready(POLLOUT, deadline, "connect"); !ready) {
      return fail("connect to " + ip_port + ": " + ready.error().message);
    }
    int err = 0;
    socklen_t err_len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len);
    if (err != 0) return fail("connect to " + ip_port + ": " + errno_text(err));
    waiting.fd_ = -1;
  }
  BlockingConn conn(fd);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return conn;
}

Status BlockingConn::wait_ready(short events, Clock::time_point deadline, const char* what) {
  while (true) {
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) return fail(std::string(what) + ": cancelled");
    const auto now = Clock::now();
    if (now >= deadline) return fail(std::string(what) + ": timed out");
    const auto slice = std::min<Clock::duration>(deadline - now, kCancelSlice);
    pollfd p{fd_, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count()));
    if (n < 0 && errno != EINTR) return fail(std::string(what) + ": poll: " + errno_text(errno));
    if (n > 0) return Ok{};
  }
}

Result<bool> BlockingConn::arm_timeout(int option, Clock::time_point deadline, const char* what) {
  if (cancel_ && cancel_->load(std::memory_order_relaxed)) return fail(std::string(what) + ": cancelled");
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
  if (left.count() <= 0) return fail(std::string(what) + ": timed out");
  // 0 would mean no timeout at all; the slice is set only when it changes (almost always it stays
  // kCancelSlice: deadlines are seconds away), so a flowing stream costs no extra call.
  const auto slice = std::min<std::chrono::microseconds>(left, kCancelSlice);
  auto& armed = option == SO_RCVTIMEO ? armed_.receive : armed_.send;
  if (armed != slice) {
    const timeval tv = to_timeval(slice);
    if (::setsockopt(fd_, SOL_SOCKET, option, &tv, sizeof tv) != 0) {
      return fail(std::string(what) + ": setting the timeout: " + errno_text(errno));
    }
    armed = slice;
  }
  return true;
}

Status BlockingConn::write_all(std::span<const std::byte> bytes, Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    if (auto armed = arm_timeout(SO_SNDTIMEO, deadline, "write"); !armed) return fail(armed.error().message);
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      // EAGAIN: the slice passed with nothing sent; the next turn looks at the cancel flag and deadline.
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return fail("write: " + errno_text(errno));
    }
    done += static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
  return Ok{};
}

Result<size_t> BlockingConn::read_some(std::span<std::byte> bytes, Clock::time_point deadline) {
  while (true) {
    if (auto armed = arm_timeout(SO_RCVTIMEO, deadline, "read"); !armed) return fail(armed.error().message);
    const ssize_t n = ::recv(fd_, bytes.data(), bytes.size(), 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return fail("read: " + errno_text(errno));
    }
    if (n == 0) return fail("read: the peer closed the connection");
    read_ += static_cast<uint64_t>(n);
    return static_cast<size_t>(n);
  }
}

Status BlockingConn::read_exact(std::span<std::byte> bytes, Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    auto n = read_some(bytes.subspan(done), deadline);
    if (!n) return fail(n.error().message);
    done += *n;
  }
  return Ok{};
}

Status BlockingConn::write_frame(uint8_t type, std::span<const std::byte> payload, Clock::time_point deadline) {
  sealing_.clear();
  if (frames_) {
    frames_->send.append(sealing_, type, payload);
  } else {
    sealing_.reserve(payload.size() + wire::kFrameHeaderBytes);
    wire::append_frame(sealing_, type, payload);
  }
  return write_all(sealing_, deadline);
}

Result<wire::Frame> BlockingConn::read_frame(size_t max_payload, Clock::time_point deadline) {
  if (spill_.at < spill_.bytes.size()) return fail("a frame where the rest of a data record was expected");
  std::byte header[wire::kFrameHeaderBytes];
  if (auto r = read_exact(header, deadline); !r) return fail(r.error().message);
  const uint32_t len =
      (uint32_t(header[0]) << 24) | (uint32_t(header[1]) << 16) | (uint32_t(header[2]) << 8) | uint32_t(header[3]);
  const size_t overhead = frames_ ? wire::kFrameTagBytes : 0;
  if (len < 1 + overhead) return fail(len == 0 ? "an empty frame" : "a sealed frame shorter than its tag");
  if (len - 1 - overhead > max_payload) {
    return fail("a frame of " + std::to_string(len - 1 - overhead) + " bytes, above the limit of " +
                std::to_string(max_payload));
  }
  wire::Frame f;
  f.type = static_cast<uint8_t>(header[4]);
  // The payload's memory grows with the bytes that arrive (grow_for_arrival), never to the
  // announced length up front: a peer that announces the limit and sends nothing costs little.
  const size_t payload = len - 1;
  while (f.payload.size() < payload) {
    const size_t filled = f.payload.size();
    f.payload.resize(grow_for_arrival(filled, payload));
    if (auto r = read_exact(std::span<std::byte>(f.payload).subspan(filled), deadline); !r) {
      return fail(r.error().message);
    }
  }
  if (frames_) {
    if (auto opened = frames_->receive.open(f); !opened) return fail(opened.error().detail);
  }
  return f;
}

void BlockingConn::set_keys(const wire::StreamKeys& keys) { frames_ = std::make_unique<wire::SealedFrames>(keys); }

std::optional<wire::StreamCipher> BlockingConn::cipher() const {
  if (!frames_) return std::nullopt;
  return frames_->send.cipher();
}

Status BlockingConn::write_data(std::span<const std::byte> bytes, Clock::time_point deadline) {
  if (!frames_) return write_all(bytes, deadline);
  for (size_t off = 0; off < bytes.size(); off += kMaxDataRecordBytes) {
    const auto part = bytes.subspan(off, std::min(kMaxDataRecordBytes, bytes.size() - off));
    sealing_.resize(wire::kFrameHeaderBytes + part.size() + wire::kFrameTagBytes);
    frames_->send.seal(wire::type_byte(wire::FrameType::data), part, sealing_);
    if (auto r = write_all(sealing_, deadline); !r) return r;
  }
  return Ok{};
}

Result<size_t> BlockingConn::read_data(std::span<std::byte> bytes, Clock::time_point deadline) {
  if (bytes.empty()) return fail("read_data: no room given");
  if (!frames_) return read_some(bytes, deadline);
  if (spill_.at < spill_.bytes.size()) {
    const size_t n = std::min(bytes.size(), spill_.bytes.size() - spill_.at);
    std::memcpy(bytes.data(), spill_.bytes.data() + spill_.at, n);
    spill_.at += n;
    return n;
  }
  return read_record(bytes, deadline);
}

// The next sealed data record: into `bytes` and opened there when it fits, else into the spill buffer.
Result<size_t> BlockingConn::read_record(std::span<std::byte> bytes, Clock::time_point deadline) {
  std::byte header[wire::kFrameHeaderBytes];
  if (auto r = read_exact(header, deadline); !r) return fail(r.error().message);
  const uint32_t len =
      (uint32_t(header[0]) << 24) | (uint32_t(header[1]) << 16) | (uint32_t(header[2]) << 8) | uint32_t(header[3]);
  if (static_cast<uint8_t>(header[4]) != wire::type_byte(wire::FrameType::data)) {
    return fail("a frame of type " + std::to_string(static_cast<unsigned>(header[4])) +
                " where checkpoint data was expected");
  }
  // A record of no bytes is never sent: refusing it keeps every call's progress at least one byte.
  if (len <= 1 + wire::kFrameTagBytes || len - 1 - wire::kFrameTagBytes > kMaxDataRecordBytes) {
    return fail("a data record of " + std::to_string(len) + " bytes, outside 1.." +
                std::to_string(kMaxDataRecordBytes) + " plus its tag");
  }
  const size_t body = len - 1 - wire::kFrameTagBytes;
  std::byte tag[wire::kFrameTagBytes];
  const bool in_place = body <= bytes.size();
  if (!in_place) {
    spill_.bytes.resize(body);  // allocated only for this record's announced size, at most kMaxDataRecordBytes
    spill_.at = 0;
  }
  const std::span<std::byte> into = in_place ? bytes.first(body) : std::span<std::byte>(spill_.bytes);
  if (auto r = read_exact(into, deadline); !r) return fail(r.error().message);
  if (auto r = read_exact(tag, deadline); !r) return fail(r.error().message);
  auto opened = frames_->receive.open(std::span<const std::byte, wire::kFrameHeaderBytes>(header), into,
                                      std::span<const std::byte, wire::kFrameTagBytes>(tag));
  if (!opened) {
    spill_ = Spill{};
    return fail(opened.error().detail);
  }
  if (in_place) return body;
  const size_t n = bytes.size();
  std::memcpy(bytes.data(), spill_.bytes.data(), n);
  spill_.at = n;
  return n;
}

}  // namespace shoal::net
