// What a trainer with an embedded agent gets without asking: a control socket where `shoal status`
// looks (the default path for its name, as `shoal agent` serves), and a process that a peer closing
// its connection cannot kill with SIGPIPE. Real sessions on loopback.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "control/client.hpp"
#include "control/socket_path.hpp"
#include "shoal/errors.hpp"
#include "shoal/session.hpp"

using namespace std::chrono_literals;

namespace {

shoal::SessionOptions loopback(const std::string& name) {
  shoal::SessionOptions o;
  o.name = name;
  o.bind = "127.0.0.1:0";
  o.cluster = "embedded-test";
  o.log_spec = "warn";
  o.insecure = true;  // loopback only
  return o;
}

std::string unique_name(const char* what) { return std::string(what) + "-" + std::to_string(::getpid()); }

void on_sigpipe(int) {}

sighandler_t sigpipe_handler() {
  struct sigaction now {};
  REQUIRE(::sigaction(SIGPIPE, nullptr, &now) == 0);
  return now.sa_handler;
}

}  // namespace

TEST_CASE("an embedded session serves its control socket at the default path for its name") {
  const std::string name = unique_name("embedded-ctl");
  const std::string path = shoal::control::default_control_path(name, shoal::control::probe_control_dirs());
  auto session = shoal::Session::start(loopback(name));
  session->wait_for_view(0, 10s);
  REQUIRE(::access(path.c_str(), F_OK) == 0);
  auto reply = shoal::control::control_request(path, "members");
  REQUIRE_MESSAGE(reply, (reply ? "" : reply.error().message));
  CHECK(reply->find(name) != std::string::npos);
  session->leave();
  session.reset();
  CHECK(::access(path.c_str(), F_OK) != 0);  // removed when the agent stops
}

TEST_CASE("a second session of the same name still starts, without a control socket, and \"none\" serves none") {
  const std::string name = unique_name("embedded-twice");
  const std::string path = shoal::control::default_control_path(name, shoal::control::probe_control_dirs());
  auto first = shoal::Session::start(loopback(name));
  auto second = shoal::Session::start(loopback(name));  // the default path is taken: a warning, not an error
  CHECK(shoal::control::control_request(path, "members"));
  auto explicit_taken = loopback(name);
  explicit_taken.control_path = path;  // asked for by name: then it is an error
  CHECK_THROWS_AS(shoal::Session::start(explicit_taken), shoal::Error);
  second->leave();
  first->leave();
  auto none = loopback(unique_name("embedded-none"));
  none.control_path = "none";
  auto quiet = shoal::Session::start(none);
  const std::string quiet_path =
      shoal::control::default_control_path(none.name, shoal::control::probe_control_dirs());
  CHECK(::access(quiet_path.c_str(), F_OK) != 0);
  quiet->leave();
}

TEST_CASE("a session ignores SIGPIPE unless the program installed a handler of its own") {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  REQUIRE(::sigaction(SIGPIPE, &dfl, nullptr) == 0);
  auto options = loopback(unique_name("embedded-pipe"));
  options.control_path = "none";
  {
    auto session = shoal::Session::start(options);
    CHECK((sigpipe_handler() == SIG_IGN));
    // Writing to a pipe whose reader is gone now fails with EPIPE instead of killing the process.
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    ::close(fds[0]);
    CHECK(::write(fds[1], "x", 1) == -1);
    CHECK(errno == EPIPE);
    ::close(fds[1]);
    session->leave();
  }
  struct sigaction mine {};
  mine.sa_handler = on_sigpipe;
  sigemptyset(&mine.sa_mask);
  REQUIRE(::sigaction(SIGPIPE, &mine, nullptr) == 0);
  {
    auto session = shoal::Session::start(options);
    CHECK((sigpipe_handler() == &on_sigpipe));
    session->leave();
  }
  REQUIRE(::sigaction(SIGPIPE, &dfl, nullptr) == 0);
}

TEST_CASE("an embedded session without a cluster key refuses to start unless told it may run open") {
  ::unsetenv("SHOAL_KEY_FILE");
  auto o = loopback(unique_name("nokey"));
  o.insecure = false;
  try {
    (void)shoal::Session::start(o);
    FAIL("a session started with no key and no insecure");
  } catch (const shoal::Error& e) {
    CHECK(std::string(e.what()).find("no cluster key") != std::string::npos);
    CHECK(std::string(e.what()).find("insecure") != std::string::npos);
  }
  o.insecure = true;
  o.key_file = "/nonexistent/cluster.key";
  CHECK_THROWS_AS(shoal::Session::start(o), shoal::Error);  // both at once: refused too
}
