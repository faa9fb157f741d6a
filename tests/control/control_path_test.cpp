// Where the control socket goes by default, and what clients look for.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "control/socket_path.hpp"

using shoal::control::control_file_name;
using shoal::control::control_path_candidates;
using shoal::control::ControlDirs;
using shoal::control::default_control_path;

TEST_CASE("the default control path prefers /run/shoal, then XDG_RUNTIME_DIR, then /tmp/shoal-UID") {
  ControlDirs all{true, "/run/user/1000", 1000};
  CHECK(default_control_path("n1", all) == "/run/shoal/n1.sock");
  ControlDirs no_run{false, "/run/user/1000", 1000};
  CHECK(default_control_path("n1", no_run) == "/run/user/1000/shoal/n1.sock");
  ControlDirs only_tmp{false, std::nullopt, 1000};
  CHECK(default_control_path("n1", only_tmp) == "/tmp/shoal-1000/n1.sock");
}

TEST_CASE("clients look in every default place, most preferred first") {
  ControlDirs all{true, "/run/user/7", 7};
  CHECK(control_path_candidates("x", all) ==
        std::vector<std::string>{"/run/shoal/x.sock", "/run/user/7/shoal/x.sock", "/tmp/shoal-7/x.sock"});
}

TEST_CASE("a client that finds no agent says where it looked") {
  // A directory that does not exist and a user id nobody has: no socket of another test is found there.
  const std::string xdg = "/nonexistent/shoal-test";
  const ControlDirs dirs{false, xdg, 4000000123u};
  auto none = shoal::control::choose_control_socket(std::nullopt, std::nullopt, dirs);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message == "no shoal agent found on this machine (looked for " + xdg +
                                    "/shoal/*.sock, /tmp/shoal-4000000123/*.sock); pass --control PATH or --name NAME");
  auto named = shoal::control::choose_control_socket(std::nullopt, std::string("n1"), dirs);
  REQUIRE_FALSE(named.ok());
  CHECK(named.error().message == "no shoal agent named 'n1' on this machine (looked for " + xdg +
                                     "/shoal/n1.sock, /tmp/shoal-4000000123/n1.sock)");
  CHECK(*shoal::control::choose_control_socket(std::string("/x.sock"), std::nullopt, dirs) == "/x.sock");
}

TEST_CASE("member names become safe file names") {
  CHECK(control_file_name("node01") == "node01.sock");
  CHECK(control_file_name("host/0") == "host_0.sock");
  CHECK(control_file_name("../etc") == ".._etc.sock");
  CHECK(control_file_name("a b:c") == "a_b_c.sock");
  CHECK(control_file_name("..") == "_...sock");
  CHECK(control_file_name("") == "_.sock");
}

TEST_CASE("the control socket's directory must be this user's or root's, and not writable by others") {
  char base_template[] = "/tmp/shoaltest-dir-XXXXXX";  // not /tmp/shoal-UID: no private-dir rule
  REQUIRE(::mkdtemp(base_template) != nullptr);
  const std::string base = base_template;
  const std::string sock = base + "/a.sock";
  CHECK(shoal::control::prepare_control_dir(sock).ok());  // mkdtemp: 0700, ours
  REQUIRE(::chmod(base.c_str(), 0777) == 0);              // writable by everyone, no sticky bit
  const auto open = shoal::control::prepare_control_dir(sock);
  REQUIRE_FALSE(open.ok());
  CHECK(open.error().message.find("writable by other users") != std::string::npos);
  REQUIRE(::chmod(base.c_str(), 01777) == 0);  // like /tmp: allowed
  CHECK(shoal::control::prepare_control_dir(sock).ok());
  if (::geteuid() == 0) {
    REQUIRE(::chmod(base.c_str(), 0755) == 0);
    REQUIRE(::chown(base.c_str(), 65534, 65534) == 0);  // another user's directory
    const auto theirs = shoal::control::prepare_control_dir(sock);
    REQUIRE_FALSE(theirs.ok());
    CHECK(theirs.error().message.find("neither this user nor root") != std::string::npos);
  }
  ::rmdir(base.c_str());
}
