// persist_peers: the versions of one job persisted under every member's directory of a shared --ckpt-dir
// (<dir>/<member>/<job>/), found and read without writing there, so that hosts of other names can resume
// from what the lost ones persisted (persisted_resume.hpp chooses). Directories and files are guarded as
// persist_trust.hpp says: a member's directory or its job's that is a link, another user's or writable by
// others is refused and skipped, and so is any file persist_trust refuses; nothing found there is trusted
// before it is bounded and its checksums hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "ckpt_shm/persist_dir.hpp"
#include "ckpt_shm/persist_trust.hpp"
#include "ckpt_shm/persisted_resume.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {

// The most member directories read below one --ckpt-dir; more are ignored (and said so once).
inline constexpr size_t kMaxPersistMembers = 65536;

// A member name as one directory level (<dir>/<this>/<job>/): characters other than letters, digits, '-',
// '_' and '.' become '_', and "." or ".." get a leading '_'.
std::string member_dir_name(const std::string& member);

// Every version of `job` listed or found under each member directory of `root`, each validated from its
// prefix (persist_files' recover_entries: the manifest's list checked against the files, else the files'
// headers); read-only. Entries of `root` that are not directories are skipped, unsafe ones refused (counted).
std::vector<PersistedCandidate> find_persisted(const std::string& root, const std::string& job,
                                               uint64_t max_version_bytes);

// Reads the file of `v` into `place(size)` and validates all of it (decode_version, every data checksum),
// and that it holds what `v` says: job, rank, step, sequence, world and size. A refused or corrupt file is
// counted (persist_trust's `invalid` and others) and comes back with `refusal` set; an I/O error without.
Result<VersionInfo, PersistError> load_persisted_file(const PersistedVersion& v, const std::string& job,
                                                      uint64_t max_version_bytes, const PersistDir::Placement& place);

}  // namespace shoal::ckpt
