// Where the control socket goes by default, and what clients look for.
#include <doctest/doctest.h>

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

TEST_CASE("member names become safe file names") {
  CHECK(control_file_name("node01") == "node01.sock");
  CHECK(control_file_name("host/0") == "host_0.sock");
  CHECK(control_file_name("../etc") == ".._etc.sock");
  CHECK(control_file_name("a b:c") == "a_b_c.sock");
  CHECK(control_file_name("..") == "_...sock");
  CHECK(control_file_name("") == "_.sock");
}
