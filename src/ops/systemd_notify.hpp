// Telling systemd how the agent is doing: readiness, status lines, reloads, stopping and watchdog
// pings, over the service manager's notify socket ($NOTIFY_SOCKET). The protocol is implemented here
// (one datagram of KEY=VALUE lines per notification) so that shoal does not link libsystemd. Outside
// systemd every call is a no-op.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace shoal::ops {

// Calls may come from several threads (say, a watchdog thread and the main loop): the socket is made
// once, in the constructor, and sendto on it needs no lock.
class SystemdNotifier {
 public:
  // From the process environment: NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID. Not under systemd
  // (no NOTIFY_SOCKET): enabled() is false and every call is a no-op returning Ok. A NOTIFY_SOCKET that
  // cannot be used gives a notifier whose calls fail with a sentence saying why. Logs nothing.
  static SystemdNotifier from_environment();
  // For tests and callers with their own values. An empty notify_socket: not under systemd.
  // watchdog_usec 0: no watchdog. watchdog_pid: the process the watchdog is meant for, when known.
  SystemdNotifier(std::string notify_socket, uint64_t watchdog_usec, std::optional<pid_t> watchdog_pid);
  ~SystemdNotifier();
  SystemdNotifier(SystemdNotifier&& other) noexcept;
  SystemdNotifier& operator=(SystemdNotifier&& other) noexcept;
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  bool enabled() const;
  Status ready(const std::string& status);     // "READY=1\nSTATUS=..."
  Status status(const std::string& status);    // "STATUS=..."
  Status stopping(const std::string& status);  // "STOPPING=1\nSTATUS=..."
  Status reloading();                          // "RELOADING=1\nMONOTONIC_USEC=<CLOCK_MONOTONIC in µs>"
  Status reloaded(const std::string& status);  // "READY=1\nSTATUS=..." after a reload
  Status watchdog();                           // "WATCHDOG=1"
  // Half of WATCHDOG_USEC (systemd's advice: ping at least twice per interval); nullopt when there is
  // no watchdog or WATCHDOG_PID names another process.
  std::optional<std::chrono::microseconds> watchdog_interval() const;
  // The raw datagram. Failures return a sentence with the socket path and the reason, and count.
  Status send(std::string_view message);
  uint64_t send_failures() const;

 private:
  std::string socket_;                // NOTIFY_SOCKET as given; empty: not under systemd
  std::string address_;               // the sockaddr_un to send to; its size() is the address length
  std::optional<std::string> error_;  // why nothing can be sent, when the socket is unusable
  uint64_t watchdog_usec_ = 0;
  std::optional<pid_t> watchdog_pid_;
  int fd_ = -1;
  std::atomic<uint64_t> failures_{0};
};

}  // namespace shoal::ops
