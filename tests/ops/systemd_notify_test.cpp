// systemd notifications: the datagrams a real AF_UNIX socket receives (path and abstract), the no-op
// outside systemd, the watchdog interval from the environment, and the sentences when sending fails.
#include "ops/systemd_notify.hpp"

#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <utility>

using shoal::ops::SystemdNotifier;

namespace {

// A datagram socket standing in for systemd's, bound at a path in a fresh temp dir or at an abstract
// name (when the name starts with '@').
class FakeSystemd {
 public:
  FakeSystemd() {
    char tmpl[] = "/tmp/shoal-sdnotify-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/notify.sock";
    bind_to(socket_);
  }
  explicit FakeSystemd(std::string abstract_name) : socket_(std::move(abstract_name)) { bind_to(socket_); }
  ~FakeSystemd() {
    ::close(fd_);
    if (!dir_.empty()) {
      ::unlink(socket_.c_str());
      ::rmdir(dir_.c_str());
    }
  }
  FakeSystemd(const FakeSystemd&) = delete;
  FakeSystemd& operator=(const FakeSystemd&) = delete;

  const std::string& notify_socket() const { return socket_; }
  const std::string& dir() const { return dir_; }

  // The next datagram, or nullopt when none comes within timeout_ms.
  std::optional<std::string> receive(int timeout_ms = 2000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  }

 private:
  void bind_to(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(name.size() + (name[0] == '@' ? 0 : 1) <= sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, name.data(), name.size());
    socklen_t len = sizeof(addr);
    if (name[0] == '@') {
      addr.sun_path[0] = '\0';
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    }
    REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), len) == 0);
  }

  std::string dir_;
  std::string socket_;
  int fd_ = -1;
};

// Sets the notify variables for one test and puts the old ones back afterwards.
class NotifyEnvironment {
 public:
  NotifyEnvironment(const char* socket, const char* usec, const char* pid) {
    for (auto& [name, old] : saved_) {
      if (const char* v = std::getenv(name)) old = v;
    }
    put("NOTIFY_SOCKET", socket);
    put("WATCHDOG_USEC", usec);
    put("WATCHDOG_PID", pid);
  }
  ~NotifyEnvironment() {
    for (auto& [name, old] : saved_) put(name, old ? old->c_str() : nullptr);
  }
  NotifyEnvironment(const NotifyEnvironment&) = delete;
  NotifyEnvironment& operator=(const NotifyEnvironment&) = delete;

 private:
  static void put(const char* name, const char* value) {
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  std::pair<const char*, std::optional<std::string>> saved_[3] = {
      {"NOTIFY_SOCKET", std::nullopt}, {"WATCHDOG_USEC", std::nullopt}, {"WATCHDOG_PID", std::nullopt}};
};

uint64_t now_monotonic_usec() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

// Every kind of notification arrives as exactly the datagram systemd expects.
void check_every_notification(FakeSystemd& systemd) {
  SystemdNotifier notifier(systemd.notify_socket(), 0, std::nullopt);
  CHECK(notifier.enabled());

  REQUIRE(notifier.ready("joined cluster prod"));
  CHECK(systemd.receive() == "READY=1\nSTATUS=joined cluster prod");
  REQUIRE(notifier.status("4 members"));
  CHECK(systemd.receive() == "STATUS=4 members");
  REQUIRE(notifier.watchdog());
  CHECK(systemd.receive() == "WATCHDOG=1");

  const uint64_t before = now_monotonic_usec();
  REQUIRE(notifier.reloading());
  const uint64_t after = now_monotonic_usec();
  const auto reloading = systemd.receive();
  REQUIRE(reloading);
  const std::string prefix = "RELOADING=1\nMONOTONIC_USEC=";
  REQUIRE(reloading->rfind(prefix, 0) == 0);
  const std::string usec = reloading->substr(prefix.size());
  REQUIRE(!usec.empty());
  CHECK(usec.find_first_not_of("0123456789") == std::string::npos);
  const uint64_t stamp = std::strtoull(usec.c_str(), nullptr, 10);
  CHECK(stamp >= before);
  CHECK(stamp <= after);

  REQUIRE(notifier.reloaded("config reloaded"));
  CHECK(systemd.receive() == "READY=1\nSTATUS=config reloaded");
  REQUIRE(notifier.stopping("leaving the cluster"));
  CHECK(systemd.receive() == "STOPPING=1\nSTATUS=leaving the cluster");

  CHECK(systemd.receive(50) == std::nullopt);
  CHECK(notifier.send_failures() == 0);
}

}  // namespace

TEST_CASE("notifications reach a notify socket at a path as systemd's datagrams") {
  FakeSystemd systemd;
  check_every_notification(systemd);
}

TEST_CASE("notifications reach an abstract notify socket ('@' name)") {
  FakeSystemd systemd("@shoal-test-" + std::to_string(::getpid()));
  check_every_notification(systemd);
}

TEST_CASE("not under systemd every call is a no-op that succeeds") {
  SystemdNotifier notifier("", 0, std::nullopt);
  CHECK_FALSE(notifier.enabled());
  CHECK(notifier.ready("up"));
  CHECK(notifier.status("fine"));
  CHECK(notifier.watchdog());
  CHECK(notifier.reloading());
  CHECK(notifier.reloaded("again"));
  CHECK(notifier.stopping("bye"));
  CHECK(notifier.send("X=1"));
  CHECK(notifier.send_failures() == 0);
  CHECK(notifier.watchdog_interval() == std::nullopt);

  NotifyEnvironment env(nullptr, "30000000", nullptr);
  const auto from_env = SystemdNotifier::from_environment();
  CHECK_FALSE(from_env.enabled());
}

TEST_CASE("a status with newlines is sent as one line") {
  FakeSystemd systemd;
  SystemdNotifier notifier(systemd.notify_socket(), 0, std::nullopt);
  REQUIRE(notifier.status("first\nsecond\n"));
  CHECK(systemd.receive() == "STATUS=first second ");
  REQUIRE(notifier.ready("a\nREADY=0"));
  CHECK(systemd.receive() == "READY=1\nSTATUS=a READY=0");
}

TEST_CASE("from_environment reads NOTIFY_SOCKET and the watchdog variables") {
  FakeSystemd systemd;
  const std::string own_pid = std::to_string(::getpid());
  const std::string other_pid = std::to_string(::getpid() + 1);

  SUBCASE("WATCHDOG_USEC alone: ping every half interval") {
    NotifyEnvironment env(systemd.notify_socket().c_str(), "30000000", nullptr);
    auto notifier = SystemdNotifier::from_environment();
    CHECK(notifier.enabled());
    CHECK(notifier.watchdog_interval() == std::chrono::seconds(15));
    REQUIRE(notifier.watchdog());
    CHECK(systemd.receive() == "WATCHDOG=1");
  }
  SUBCASE("WATCHDOG_PID of this process") {
    NotifyEnvironment env(systemd.notify_socket().c_str(), "30000000", own_pid.c_str());
    CHECK(SystemdNotifier::from_environment().watchdog_interval() == std::chrono::seconds(15));
  }
  SUBCASE("WATCHDOG_PID of another process") {
    NotifyEnvironment env(systemd.notify_socket().c_str(), "30000000", other_pid.c_str());
    CHECK(SystemdNotifier::from_environment().watchdog_interval() == std::nullopt);
  }
  SUBCASE("WATCHDOG_PID that is no pid") {
    NotifyEnvironment env(systemd.notify_socket().c_str(), "30000000", "self");
    CHECK(SystemdNotifier::from_environment().watchdog_interval() == std::nullopt);
  }
  SUBCASE("no WATCHDOG_USEC") {
    NotifyEnvironment env(systemd.notify_socket().c_str(), nullptr, nullptr);
    CHECK(SystemdNotifier::from_environment().watchdog_interval() == std::nullopt);
  }
  SUBCASE("WATCHDOG_USEC that is not a positive integer") {
    for (const char* bad : {"", "abc", "30s", "-5", "0", " 30", "99999999999999999999999"}) {
      CAPTURE(bad);
      NotifyEnvironment env(systemd.notify_socket().c_str(), bad, nullptr);
      CHECK(SystemdNotifier::from_environment().watchdog_interval() == std::nullopt);
    }
  }
}

TEST_CASE("watchdog_interval from the constructor's values") {
  CHECK(SystemdNotifier("", 0, std::nullopt).watchdog_interval() == std::nullopt);
  CHECK(SystemdNotifier("/run/x", 30000000, std::nullopt).watchdog_interval() == std::chrono::seconds(15));
  CHECK(SystemdNotifier("/run/x", 30000000, ::getpid()).watchdog_interval() == std::chrono::seconds(15));
  CHECK(SystemdNotifier("/run/x", 30000000, ::getpid() + 1).watchdog_interval() == std::nullopt);
}

TEST_CASE("sending to a socket path that does not exist fails with a sentence naming the path") {
  FakeSystemd systemd;
  const std::string missing = systemd.dir() + "/no-such.sock";
  SystemdNotifier notifier(missing, 0, std::nullopt);
  CHECK(notifier.enabled());
  const auto first = notifier.ready("up");
  REQUIRE_FALSE(first);
  CHECK(first.error().message.find(missing) != std::string::npos);
  CHECK(first.error().message.find(std::strerror(ENOENT)) != std::string::npos);
  CHECK(notifier.send_failures() == 1);
  CHECK_FALSE(notifier.watchdog());
  CHECK(notifier.send_failures() == 2);
}

TEST_CASE("a NOTIFY_SOCKET that is no usable address makes every call fail with a sentence") {
  SUBCASE("a relative path") {
    SystemdNotifier notifier("run/notify", 0, std::nullopt);
    CHECK(notifier.enabled());
    const auto st = notifier.ready("up");
    REQUIRE_FALSE(st);
    CHECK(st.error().message.find("'run/notify'") != std::string::npos);
    CHECK(st.error().message.find("absolute path") != std::string::npos);
    CHECK(notifier.send_failures() == 1);
  }
  SUBCASE("a path too long for a unix socket address") {
    const std::string long_path = "/" + std::string(200, 'x');
    SystemdNotifier notifier(long_path, 0, std::nullopt);
    const auto st = notifier.status("x");
    REQUIRE_FALSE(st);
    CHECK(st.error().message.find("longer than") != std::string::npos);
  }
  SUBCASE("an abstract name too long") {
    SystemdNotifier notifier("@" + std::string(108, 'x'), 0, std::nullopt);
    CHECK_FALSE(notifier.watchdog());
  }
  SUBCASE("'@' alone") {
    SystemdNotifier notifier("@", 0, std::nullopt);
    CHECK_FALSE(notifier.watchdog());
  }
  SUBCASE("from the environment") {
    NotifyEnvironment env("notify.sock", nullptr, nullptr);
    auto notifier = SystemdNotifier::from_environment();
    CHECK(notifier.enabled());
    const auto st = notifier.ready("up");
    REQUIRE_FALSE(st);
    CHECK(st.error().message.find("'notify.sock'") != std::string::npos);
  }
}

TEST_CASE("the longest abstract name that fits is accepted") {
  // sun_path holds 108 bytes: the leading NUL and 107 of name.
  FakeSystemd systemd("@" + std::string(106 - std::to_string(::getpid()).size(), 'n') + std::to_string(::getpid()));
  SystemdNotifier notifier(systemd.notify_socket(), 0, std::nullopt);
  REQUIRE(notifier.watchdog());
  CHECK(systemd.receive() == "WATCHDOG=1");
}
