// persist_files: the on-disk format of a PersistDir job directory: how version files are named, the
// MANIFEST that lists them, and recovering that list at open. Internal to ckpt_shm.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.hpp"
#include "ckpt_shm/persist_dir.hpp"

namespace shoal::ckpt {

using Key = std::pair<uint32_t, uint64_t>;  // (rank, step)
using Entries = std::map<Key, PersistedVersion>;

inline constexpr std::string_view kSuffix = ".shoalckpt";
// Ends a file's name while it is written ("<name>.<16 random hex digits>.tmp", persist_trust's
// create_temp_file); renamed away once it is complete and durable.
inline constexpr std::string_view kTmpSuffix = ".tmp";

// "r<rank>.s<step>.shoalckpt".
std::string file_name(uint32_t rank, uint64_t step);

// (rank, step) of a file named exactly as file_name spells it (no leading zeros, no sign).
std::optional<Key> parse_file_name(std::string_view file);

// The MANIFEST's text: a header line, then "rank step sequence world bytes file-name" per version.
std::string format_manifest(const Entries& entries);

// The versions a MANIFEST's text lists, each `path` the file's name alone; reads no file. Fails (with
// what is wrong, to follow the manifest's path) without the header, or at a line that does not parse,
// names its file otherwise than file_name, or lists a version twice.
Result<Entries> parse_manifest(std::string_view text);

// Removes the "*.tmp" files a crash mid-write left behind; fails when one cannot be removed.
Status remove_leftovers(const std::string& dir);

// The list at open: the manifest's, completed by files it does not list (a crash between a rename and
// the manifest's update); or, when the manifest is missing, refused or inconsistent, every valid file.
// Files are opened only as persist_trust allows (no links, FIFOs, other users' files, nor version files
// larger than `max_version_bytes`); those refused are counted and left alone.
Result<Entries> recover_entries(const std::string& dir, const std::string& job, uint64_t max_version_bytes);

// Replaces the manifest atomically: a temporary file (create_temp_file), fsync, rename, fsync of the directory.
Status write_manifest(const std::string& dir, const Entries& entries);

}  // namespace shoal::ckpt
