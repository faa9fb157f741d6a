// persist_files: naming version files, writing and reading the MANIFEST, and rebuilding the list of
// versions at open from the manifest and the files themselves.
#include "ckpt_shm/persist_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <sstream>
#include <system_error>
#include <vector>

#include "base/log.hpp"
#include "ckpt_shm/persist_io.hpp"
#include "ckpt_shm/persist_trust.hpp"
#include "ckpt_shm/version_layout.hpp"
#include "base/str_cat.hpp"

namespace shoal::ckpt {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kManifest = "MANIFEST";
constexpr std::string_view kManifestHeader = "shoal-ckpt-manifest 1";

template <class T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The entries of `dir` whose names end with `suffix`, sorted.
Result<std::vector<fs::path>> list_files(const std::string& dir, std::string_view suffix) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().ends_with(suffix)) files.push_back(it->path());
  }
  if (ec) return fail("cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// The version in the file at `path`, validated from its prefix alone: a regular file of this user within
// `max_bytes`, holding a sealed version of (job, rank, step) whose size is the file's. Refusals are counted.
Result<PersistedVersion, PersistError> validate_file(const std::string& path, const std::string& job, Key key,
                                                     uint64_t max_bytes) {
  auto opened = open_persisted(path, max_bytes);
  if (!opened) return fail(opened.error());
  Fd fd(opened->fd);
  const auto size = static_cast<uint64_t>(opened->st.st_size);
  const auto invalid = [&](const std::string& detail) {
    return fail(refuse_persisted(PersistRefusal::invalid, path, detail));
  };
  std::vector<std::byte> header(kHeaderBytes);
  if (size < kHeaderBytes) return invalid("not a version: " + std::to_string(size) + " bytes, less than its header");
  if (int err = read_all(fd.get(), header, 0); err != 0) return fail(PersistError{{}, io_error("read", path, err)});
  auto length = prefix_bytes(header);
  if (!length) return invalid("not a valid version (" + layout_text(length.error()) + ")");
  if (*length > size) return invalid("truncated: " + std::to_string(size) + " bytes, less than its own table");
  std::vector<std::byte> prefix(static_cast<size_t>(*length));
  if (int err = read_all(fd.get(), prefix, 0); err != 0) return fail(PersistError{{}, io_error("read", path, err)});
  auto info = decode_prefix(prefix);
  if (!info) return invalid("not a valid version (" + layout_text(info.error()) + ")");
  if (info->id.job != job || info->id.rank != key.first || info->id.step != key.second || size != info->total_bytes) {
    return invalid("holds " + version_text(info->id.rank, info->id.step) + " of job " + info->id.job + " (" +
                   std::to_string(info->total_bytes) + " bytes in " + std::to_string(size) +
                   "), not what its name says");
  }
  return PersistedVersion{key.first, key.second, info->id.sequence, info->id.world, info->total_bytes, path};
}

// Adds to `entries` every valid *.shoalckpt file of `dir` it does not hold yet; files that fail
// validation are refused (counted, logged) and left alone.
Status scan_files(const std::string& dir, const std::string& job, uint64_t max_bytes, Entries& entries) {
  auto files = list_files(dir, kSuffix);
  if (!files) return fail(files.error().message);
  for (const auto& path : *files) {
    const auto key = parse_file_name(path.filename().string());
    if (!key) {
      (void)refuse_persisted(PersistRefusal::invalid, path.string(), std::string("not named r<rank>.s<step>") +
                                                                          std::string(kSuffix));
      continue;
    }
    if (entries.contains(*key)) continue;
    auto found = validate_file(path.string(), job, *key, max_bytes);
    if (!found) {
      if (!found.error().refusal) log::ckpt().warn("ignoring a checkpoint file: {}", found.error().message);
      continue;
    }
    entries.emplace(*key, std::move(*found));
  }
  return Ok{};
}

// The manifest's entries, each checked against its file (a regular file of this user, of the size listed;
// its contents are not read); nullopt when there is no manifest. Fails when it is refused or inconsistent.
Result<std::optional<Entries>> read_manifest(const std::string& dir, uint64_t max_bytes) {
  const std::string path = (fs::path(dir) / kManifest).string();
  bool missing = false;
  auto opened = open_persisted(path, kMaxManifestBytes, &missing);
  if (!opened && missing) return std::optional<Entries>();
  if (!opened) return fail(opened.error().message);
  Fd fd(opened->fd);
  std::string text(static_cast<size_t>(opened->st.st_size), '\0');
  if (int err = read_all(fd.get(), std::as_writable_bytes(std::span(text)), 0); err != 0) {
    return fail(io_error("read", path, err));
  }
  auto entries = parse_manifest(text);
  if (!entries) return fail(refuse_persisted(PersistRefusal::invalid, path, entries.error().message).message);
  const uid_t user = ::geteuid();
  for (auto& [key, e] : *entries) {
    const std::string file = (fs::path(dir) / e.path).string();
    struct stat st {};
    // Judged, not counted: the scan that follows an inconsistent manifest opens the file and counts it.
    if (::lstat(file.c_str(), &st) != 0 || judge_persist_file(st, user, max_bytes) ||
        static_cast<uint64_t>(st.st_size) != e.bytes) {
      return fail(path + " lists " + file + ", which is missing, not a file shoal wrote, or of another size");
    }
    e.path = file;
  }
  return std::optional<Entries>(std::move(*entries));
}

}  // namespace

std::string file_name(uint32_t rank, uint64_t step) {
  return str_cat("r", std::to_string(rank), ".s", std::to_string(step), kSuffix);
}

std::optional<Key> parse_file_name(std::string_view file) {
  if (!file.starts_with('r') || !file.ends_with(kSuffix)) return std::nullopt;
  const std::string_view middle = file.substr(1, file.size() - 1 - kSuffix.size());
  const size_t dot = middle.find(".s");
  if (dot == std::string_view::npos) return std::nullopt;
  const auto rank = parse_number<uint32_t>(middle.substr(0, dot));
  const auto step = parse_number<uint64_t>(middle.substr(dot + 2));
  if (!rank || !step || file_name(*rank, *step) != file) return std::nullopt;
  return Key{*rank, *step};
}

std::string format_manifest(const Entries& entries) {
  std::string text = std::string(kManifestHeader) + "\n";
  for (const auto& [key, e] : entries) {
    text += std::to_string(e.rank) + " " + std::to_string(e.step) + " " + std::to_string(e.sequence) + " " +
            std::to_string(e.world) + " " + std::to_string(e.bytes) + " " + file_name(e.rank, e.step) + "\n";
  }
  return text;
}

Result<Entries> parse_manifest(std::string_view text) {
  // Lines as std::getline splits them: a last line without its newline counts, nothing after a final one.
  size_t at = 0;
  auto next_line = [&](std::string_view& line) {
    if (at >= text.size()) return false;
    const size_t end = std::min(text.find('\n', at), text.size());
    line = text.substr(at, end - at);
    at = end + 1;
    return true;
  };
  std::string_view line;
  if (!next_line(line) || line != kManifestHeader) return fail("does not start with its header");
  Entries entries;
  while (next_line(line)) {
    std::istringstream words{std::string(line)};
    std::array<std::string, 7> f;  // rank step sequence world bytes filename, and a seventh one too many
    for (auto& word : f) words >> word;
    const auto rank = parse_number<uint32_t>(f[0]);
    const auto step = parse_number<uint64_t>(f[1]);
    const auto sequence = parse_number<uint64_t>(f[2]);
    const auto world = parse_number<uint32_t>(f[3]);
    const auto bytes = parse_number<uint64_t>(f[4]);
    if (!rank || !step || !sequence || !world || !bytes || f[5] != file_name(*rank, *step) || !f[6].empty() ||
        entries.contains({*rank, *step})) {
      return fail("has a line that does not parse: '" + std::string(line) + "'");
    }
    entries.emplace(Key{*rank, *step}, PersistedVersion{*rank, *step, *sequence, *world, *bytes, f[5]});
  }
  return entries;
}

Status remove_leftovers(const std::string& dir) {
  auto leftovers = list_files(dir, kTmpSuffix);
  if (!leftovers) return fail(leftovers.error().message);
  for (const auto& path : *leftovers) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail(io_error("remove", path.string(), errno));
    log::ckpt().info("removed {}, left by a write that did not finish", path.string());
  }
  return Ok{};
}

Status write_manifest(const std::string& dir, const Entries& entries) {
  const std::string text = format_manifest(entries);
  const std::string path = (fs::path(dir) / kManifest).string();
  auto tmp = create_temp_file(path);
  if (!tmp) return fail(tmp.error().message);
  Fd fd(tmp->fd);
  int err = write_all(fd.get(), std::as_bytes(std::span(text)));
  if (err == 0 && ::fsync(fd.get()) != 0) err = errno;
  if (err == 0) err = fd.close();
  if (err == 0 && ::rename(tmp->path.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp->path.c_str());
    return fail(io_error("write", path, err));
  }
  if (err = fsync_dir(dir); err != 0) return fail(io_error("sync the directory", dir, err));
  return Ok{};
}

Result<Entries> recover_entries(const std::string& dir, const std::string& job, uint64_t max_version_bytes) {
  Entries entries;
  auto listed = read_manifest(dir, max_version_bytes);
  if (listed && *listed) {
    entries = std::move(**listed);
  } else if (!listed) {
    log::ckpt().info("job {}: {}; rebuilding the list from the checkpoint files", job, listed.error().message);
  }
  const size_t listed_count = entries.size();
  if (auto scanned = scan_files(dir, job, max_version_bytes, entries); !scanned) return fail(scanned.error().message);
  if (entries.size() > listed_count) {
    log::ckpt().info("job {}: listed {} checkpoint file(s) of {} that the manifest did not", job,
                     entries.size() - listed_count, dir);
  }
  return entries;
}

}  // namespace shoal::ckpt
