// Where an agent's control socket lives by default: /run/shoal/NAME.sock when that is writable,
// else $XDG_RUNTIME_DIR/shoal/NAME.sock, else /tmp/shoal-UID/NAME.sock. The choice is a pure
// function of what the caller found on the machine, so that tests can pin every branch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace shoal::control {

// What the machine offers, as probed by probe_control_dirs().
struct ControlDirs {
  bool run_shoal_writable = false;             // /run/shoal is (or can be made) writable by us
  std::optional<std::string> xdg_runtime_dir;  // set, non-empty and writable
  uint32_t uid = 0;
};

// The socket's file name for a member name: characters other than [A-Za-z0-9._-] become '_'
// (member names may carry a slot, as in "host/0").
std::string control_file_name(std::string_view member_name);

// Every default location for `member_name`, most preferred first (clients look in all of them).
std::vector<std::string> control_path_candidates(std::string_view member_name, const ControlDirs& dirs);

// The path an agent uses when --control is not given: the first usable candidate.
std::string default_control_path(std::string_view member_name, const ControlDirs& dirs);

// For a client: the first candidate of `member_name` where a socket file exists.
std::optional<std::string> find_control_socket(std::string_view member_name, const ControlDirs& dirs);

// For a client given no name: every *.sock in the candidate directories.
std::vector<std::string> list_control_sockets(const ControlDirs& dirs);

// Looks at this machine: /run/shoal, $XDG_RUNTIME_DIR, the user id.
ControlDirs probe_control_dirs();

// Creates the socket's directory if missing. Directories named shoal-UID are made private (0700)
// and must belong to us, since /tmp is shared with other users.
Status prepare_control_dir(const std::string& socket_path);

// The id of a group named by name or number (--control-group).
Result<uint32_t> group_id(const std::string& name);

// The socket a client command asks: --control, else the one of --name, else the only agent on this
// machine; an error that says where it looked and which flag to pass otherwise.
Result<std::string> choose_control_socket(const std::optional<std::string>& control,
                                          const std::optional<std::string>& name);
// The same, looking in `dirs` instead of this machine's.
Result<std::string> choose_control_socket(const std::optional<std::string>& control,
                                          const std::optional<std::string>& name, const ControlDirs& dirs);

}  // namespace shoal::control
