// systemd's notify protocol without libsystemd: each notification is one datagram of newline-separated
// KEY=VALUE lines, sent to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an abstract name
// when it starts with '@').
#include "ops/systemd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <utility>

namespace shoal::ops {
namespace {

// A decimal number of digits only, without sign, spaces or overflow.
std::optional<uint64_t> parse_unsigned(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  uint64_t value = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

// The socket address for NOTIFY_SOCKET as raw sockaddr_un bytes, or why there is none.
Result<std::string> notify_address(const std::string& socket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const bool abstract = socket[0] == '@';
  if (!abstract && socket[0] != '/') {
    return fail("NOTIFY_SOCKET '" + socket +
                "' is neither an absolute path nor an abstract socket name starting with '@'");
  }
  if (abstract && socket.size() == 1) return fail("NOTIFY_SOCKET '@' names no abstract socket");
  // A path needs room for its terminating NUL; an abstract name has none (its leading NUL stands for '@').
  const size_t needed = abstract ? socket.size() : socket.size() + 1;
  if (needed > sizeof(addr.sun_path)) {
    return fail("NOTIFY_SOCKET '" + socket + "' is longer than a unix socket address allows (" +
                std::to_string(sizeof(addr.sun_path) - 1) + " bytes)");
  }
  std::memcpy(addr.sun_path, socket.data(), socket.size());
  if (abstract) addr.sun_path[0] = '\0';
  // An abstract name is exactly its bytes: trailing NULs would be part of it.
  const size_t length = offsetof(sockaddr_un, sun_path) + needed;
  return std::string(reinterpret_cast<const char*>(&addr), length);
}

// STATUS= takes one line.
std::string one_line(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return out;
}

uint64_t monotonic_usec() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

}  // namespace

SystemdNotifier SystemdNotifier::from_environment() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  uint64_t watchdog_usec = parse_unsigned(std::getenv("WATCHDOG_USEC")).value_or(0);
  std::optional<pid_t> watchdog_pid;
  if (const char* pid_text = std::getenv("WATCHDOG_PID"); pid_text != nullptr) {
    const auto pid = parse_unsigned(pid_text);
    // A WATCHDOG_PID that names no process cannot be meant for us.
    if (pid && *pid > 0 && *pid <= static_cast<uint64_t>(INT_MAX)) {
      watchdog_pid = static_cast<pid_t>(*pid);
    } else {
      watchdog_usec = 0;
    }
  }
  return SystemdNotifier(socket != nullptr ? socket : "", watchdog_usec, watchdog_pid);
}

SystemdNotifier::SystemdNotifier(std::string notify_socket, uint64_t watchdog_usec, std::optional<pid_t> watchdog_pid)
    : socket_(std::move(notify_socket)), watchdog_usec_(watchdog_usec), watchdog_pid_(watchdog_pid) {
  if (socket_.empty()) return;
  auto address = notify_address(socket_);
  if (!address) {
    error_ = address.error().message;
    return;
  }
  address_ = std::move(*address);
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    error_ = "cannot create a socket to notify systemd at " + socket_ + ": " + std::strerror(errno);
  }
}

SystemdNotifier::~SystemdNotifier() {
  if (fd_ >= 0) ::close(fd_);
}

SystemdNotifier::SystemdNotifier(SystemdNotifier&& other) noexcept
    : socket_(std::move(other.socket_)),
      address_(std::move(other.address_)),
      error_(std::move(other.error_)),
      watchdog_usec_(other.watchdog_usec_),
      watchdog_pid_(other.watchdog_pid_),
      fd_(std::exchange(other.fd_, -1)),
      failures_(other.failures_.load()) {
  other.socket_.clear();
}

SystemdNotifier& SystemdNotifier::operator=(SystemdNotifier&& other) noexcept {
  if (this == &other) return *this;
  if (fd_ >= 0) ::close(fd_);
  socket_ = std::move(other.socket_);
  address_ = std::move(other.address_);
  error_ = std::move(other.error_);
  watchdog_usec_ = other.watchdog_usec_;
  watchdog_pid_ = other.watchdog_pid_;
  fd_ = std::exchange(other.fd_, -1);
  failures_ = other.failures_.load();
  other.socket_.clear();
  return *this;
}

bool SystemdNotifier::enabled() const { return !socket_.empty(); }

Status SystemdNotifier::ready(const std::string& status) { return send("READY=1\nSTATUS=" + one_line(status)); }

Status SystemdNotifier::status(const std::string& status) { return send("STATUS=" + one_line(status)); }

Status SystemdNotifier::stopping(const std::string& status) { return send("STOPPING=1\nSTATUS=" + one_line(status)); }

Status SystemdNotifier::reloading() { return send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_usec())); }

Status SystemdNotifier::reloaded(const std::string& status) { return send("READY=1\nSTATUS=" + one_line(status)); }

Status SystemdNotifier::watchdog() { return send("WATCHDOG=1"); }

std::optional<std::chrono::microseconds> SystemdNotifier::watchdog_interval() const {
  if (watchdog_usec_ == 0) return std::nullopt;
  if (watchdog_pid_ && *watchdog_pid_ != ::getpid()) return std::nullopt;
  const uint64_t half = watchdog_usec_ / 2;
  return std::chrono::microseconds(static_cast<int64_t>(half > 0 ? half : 1));
}

Status SystemdNotifier::send(std::string_view message) {
  if (!enabled()) return Ok{};
  if (error_) {
    failures_.fetch_add(1);
    return fail(*error_);
  }
  sockaddr_un to{};
  std::memcpy(&to, address_.data(), address_.size());
  const auto to_len = static_cast<socklen_t>(address_.size());
  ssize_t sent = -1;
  do {
    sent = ::sendto(fd_, message.data(), message.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), to_len);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    failures_.fetch_add(1);
    return fail("cannot notify systemd at " + socket_ + ": " + std::strerror(errno));
  }
  if (static_cast<size_t>(sent) != message.size()) {
    failures_.fetch_add(1);
    return fail("cannot notify systemd at " + socket_ + ": the datagram was cut short");
  }
  return Ok{};
}

uint64_t SystemdNotifier::send_failures() const { return failures_.load(); }

}  // namespace shoal::ops
