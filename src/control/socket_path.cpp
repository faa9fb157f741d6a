// Control socket locations: the candidate list, the default choice, and probing the machine for it.
#include "control/socket_path.hpp"

#include <dirent.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace shoal::control {
namespace {

constexpr const char* kRunDir = "/run/shoal";

bool is_socket(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

bool dir_writable(const std::string& dir) { return ::access(dir.c_str(), W_OK | X_OK) == 0; }

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

std::string control_file_name(std::string_view member_name) {
  std::string out;
  for (char c : member_name) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out += keep ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out + ".sock";
}

std::vector<std::string> control_path_candidates(std::string_view member_name, const ControlDirs& dirs) {
  const std::string file = control_file_name(member_name);
  std::vector<std::string> out;
  if (dirs.run_shoal_writable) out.push_back(std::string(kRunDir) + "/" + file);
  if (dirs.xdg_runtime_dir) out.push_back(*dirs.xdg_runtime_dir + "/shoal/" + file);
  out.push_back("/tmp/shoal-" + std::to_string(dirs.uid) + "/" + file);
  return out;
}

std::string default_control_path(std::string_view member_name, const ControlDirs& dirs) {
  return control_path_candidates(member_name, dirs).front();
}

std::optional<std::string> find_control_socket(std::string_view member_name, const ControlDirs& dirs) {
  for (const auto& path : control_path_candidates(member_name, dirs)) {
    if (is_socket(path)) return path;
  }
  return std::nullopt;
}

std::vector<std::string> list_control_sockets(const ControlDirs& dirs) {
  std::vector<std::string> out;
  for (const auto& candidate : control_path_candidates("x", dirs)) {
    const std::string dir = parent_of(candidate);
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;
    while (const dirent* e = ::readdir(d)) {
      const std::string file = e->d_name;
      if (file.size() > 5 && file.compare(file.size() - 5, 5, ".sock") == 0 && is_socket(dir + "/" + file)) {
        out.push_back(dir + "/" + file);
      }
    }
    ::closedir(d);
  }
  return out;
}

ControlDirs probe_control_dirs() {
  ControlDirs dirs;
  dirs.uid = static_cast<uint32_t>(::getuid());
  struct stat st {};
  if (::stat(kRunDir, &st) == 0) {
    dirs.run_shoal_writable = S_ISDIR(st.st_mode) && dir_writable(kRunDir);
  } else {
    dirs.run_shoal_writable = dir_writable("/run");
  }
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg == '/' && dir_writable(xdg)) {
    dirs.xdg_runtime_dir = xdg;
  }
  return dirs;
}

Status prepare_control_dir(const std::string& socket_path) {
  const std::string dir = parent_of(socket_path);
  const bool private_dir = dir.rfind("/tmp/shoal-", 0) == 0;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const std::string grand = parent_of(dir);
    struct stat gst {};
    if (::stat(grand.c_str(), &gst) != 0) {
      return fail("the directory " + grand + " for the control socket does not exist");
    }
    if (::mkdir(dir.c_str(), private_dir ? 0700 : 0755) != 0 && errno != EEXIST) {
      return fail("cannot create " + dir + " for the control socket: " + std::strerror(errno));
    }
    if (::stat(dir.c_str(), &st) != 0) return fail("cannot stat " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return fail(dir + " is not a directory");
  // Whoever can write the directory can swap the socket for their own and read every trainer's requests:
  // it must belong to this user or root, and be writable by others only with the sticky bit (/tmp).
  if (private_dir && st.st_uid != ::getuid()) {
    return fail(dir + " belongs to another user; pass --control PATH");
  }
  if (st.st_uid != ::getuid() && st.st_uid != 0) {
    return fail(dir + " (for the control socket) belongs to uid " + std::to_string(st.st_uid) +
                ", neither this user nor root; pass --control PATH in a directory of your own");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return fail(dir +
                " (for the control socket) is writable by other users without the sticky bit; make it 0755 "
                "or pass --control PATH in a directory of your own");
  }
  if (private_dir && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(dir + " must be private to its user (mode 0700), not " + mode);
  }
  return Ok{};
}

Result<uint32_t> group_id(const std::string& name) {
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos && name.size() < 10) {
    return static_cast<uint32_t>(std::stoul(name));
  }
  std::vector<char> buf(16384);
  group g{};
  group* found = nullptr;
  const int rc = ::getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found);
  if (rc != 0) return fail("cannot look up group '" + name + "': " + std::strerror(rc));
  if (found == nullptr) return fail("no group named '" + name + "' on this host");
  return static_cast<uint32_t>(found->gr_gid);
}

// The socket to ask: --control, else the one of --name, else the only agent on this machine.
Result<std::string> choose_control_socket(const std::optional<std::string>& control,
                                          const std::optional<std::string>& name) {
  if (control) return *control;
  return choose_control_socket(control, name, probe_control_dirs());
}

Result<std::string> choose_control_socket(const std::optional<std::string>& control,
                                          const std::optional<std::string>& name, const ControlDirs& dirs) {
  if (control) return *control;
  if (name) {
    if (auto found = find_control_socket(*name, dirs)) return *found;
    std::string tried;
    for (const auto& p : control_path_candidates(*name, dirs)) tried += (tried.empty() ? "" : ", ") + p;
    return fail("no shoal agent named '" + *name + "' on this machine (looked for " + tried + ")");
  }
  const auto all = list_control_sockets(dirs);
  if (all.size() == 1) return all.front();
  if (all.empty()) {
    std::string looked;
    for (const auto& candidate : control_path_candidates("x", dirs)) {
      looked += (looked.empty() ? "" : ", ") + parent_of(candidate) + "/*.sock";
    }
    return fail("no shoal agent found on this machine (looked for " + looked + "); pass --control PATH or --name NAME");
  }
  std::string list;
  for (const auto& p : all) list += "\n  " + p;
  return fail("several agents run on this machine; pass --control PATH or --name NAME:" + list);
}

}  // namespace shoal::control
