// persist_peers: finding one job's persisted versions under every member's directory, and reading one back
// fully verified, without writing anything there.
#include "ckpt_shm/persist_peers.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "base/log.hpp"
#include "ckpt_shm/persist_files.hpp"
#include "ckpt_shm/persist_io.hpp"
#include "ckpt_shm/shm_segment.hpp"

namespace shoal::ckpt {
namespace {

namespace fs = std::filesystem;

// Whether `path` is a directory this user may read persisted versions from: not a link, this user's, written
// by no one else. A missing one is skipped quietly; anything else that is not such a directory is refused.
bool usable_directory(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) {
    (void)refuse_persisted(PersistRefusal::symlink, path, "a symbolic link where a member's directory was expected");
    return false;
  }
  if (judge_persist_dir(st, ::geteuid())) {
    (void)refuse_persisted(PersistRefusal::unsafe_directory, path,
                           "not a directory of this user written by no one else; its versions are not read");
    return false;
  }
  return true;
}

}  // namespace

std::string member_dir_name(const std::string& member) {
  std::string out = member;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return out == "." || out == ".." ? "_" + out : out;
}

std::vector<PersistedCandidate> find_persisted(const std::string& root, const std::string& job,
                                               uint64_t max_version_bytes) {
  std::vector<PersistedCandidate> out;
  if (!check_job_name(job)) return out;
  std::vector<std::string> members;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    // Only what is a directory or a link to one by the entry's type; usable_directory judges it on lstat.
    const auto type = it->symlink_status(ec).type();
    if (ec) break;
    if (type != fs::file_type::directory && type != fs::file_type::symlink) continue;
    if (members.size() == kMaxPersistMembers) {
      log::ckpt().warn("ckpt: {} holds more than {} member directories; the others are not read", root,
                       kMaxPersistMembers);
      break;
    }
    members.push_back(it->path().filename().string());
  }
  if (ec) log::ckpt().warn("ckpt: cannot list {}: {}", root, ec.message());
  std::sort(members.begin(), members.end());
  for (const auto& member : members) {
    const std::string member_dir = (fs::path(root) / member).string();
    const std::string job_dir = (fs::path(member_dir) / job).string();
    if (!usable_directory(member_dir)) continue;
    struct stat st {};
    if (::lstat(job_dir.c_str(), &st) != 0) continue;  // this member persisted nothing of the job
    if (!usable_directory(job_dir)) continue;
    auto entries = recover_entries(job_dir, job, max_version_bytes);
    if (!entries) {
      log::ckpt().warn("ckpt: the versions of {} are not read: {}", job_dir, entries.error().message);
      continue;
    }
    for (auto& [key, v] : *entries) out.push_back(PersistedCandidate{member, std::move(v)});
  }
  return out;
}

Result<VersionInfo, PersistError> load_persisted_file(const PersistedVersion& v, const std::string& job,
                                                      uint64_t max_version_bytes, const PersistDir::Placement& place) {
  const std::string what = version_text(v.rank, v.step);
  auto opened = open_persisted(v.path, max_version_bytes);
  if (!opened) return fail(opened.error());
  Fd fd(opened->fd);
  const auto size = static_cast<uint64_t>(opened->st.st_size);
  auto dst = place(size);
  if (!dst) return fail(PersistError{{}, dst.error().message});
  if (dst->size() < size) return fail(PersistError{{}, "no room to load " + v.path});
  const auto bytes = dst->first(static_cast<size_t>(size));
  if (int err = read_all(fd.get(), bytes, 0); err != 0) return fail(PersistError{{}, io_error("read", v.path, err)});
  auto info = decode_version(bytes, DataCheck::verify);
  if (!info) {
    return fail(refuse_persisted(PersistRefusal::invalid, v.path,
                                 "(" + what + ") is corrupted on disk: " + layout_text(info.error())));
  }
  if (info->id.job != job || info->id.rank != v.rank || info->id.step != v.step || info->total_bytes != size ||
      (v.world != 0 && info->id.world != v.world)) {
    return fail(
        refuse_persisted(PersistRefusal::invalid, v.path,
                         "no longer holds " + what + " of job " + job + " in a world of " + std::to_string(v.world)));
  }
  return std::move(*info);
}

}  // namespace shoal::ckpt
