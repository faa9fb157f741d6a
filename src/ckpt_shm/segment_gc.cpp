// plan_gc: which shoal-shaped objects of /dev/shm nobody on this host uses any more.
#include "ckpt_shm/segment_gc.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "ckpt_shm/shm_segment.hpp"

namespace shoal::ckpt {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 20 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "r<n>.v<n>", "p<n>.s<n>" or "p<n>.spare".
bool segment_suffix(std::string_view rest) {
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos || rest.size() < 2) return false;
  const char kind = rest.front();
  if (!all_digits(rest.substr(1, dot - 1))) return false;
  const auto tail = rest.substr(dot + 1);
  if (kind == 'r') return tail.size() > 1 && tail.front() == 'v' && all_digits(tail.substr(1));
  if (kind == 'p') return tail == "spare" || (tail.size() > 1 && tail.front() == 's' && all_digits(tail.substr(1)));
  return false;
}

}  // namespace

std::string_view name(GcVerdict v) {
  switch (v) {
    case GcVerdict::remove:
      return "remove";
    case GcVerdict::in_use:
      return "in_use";
    case GcVerdict::too_young:
      return "too_young";
    case GcVerdict::refused:
      return "refused";
  }
  return "unknown";
}

std::optional<std::string> segment_store_of(std::string_view file_name) {
  constexpr std::string_view kPrefix = "shoal.";
  if (!file_name.starts_with(kPrefix)) return std::nullopt;
  const auto rest = file_name.substr(kPrefix.size());
  const auto dot = rest.find('.');  // a store name never holds '.' (check_job_name)
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string store(rest.substr(0, dot));
  if (!check_job_name(store) || !segment_suffix(rest.substr(dot + 1))) return std::nullopt;
  return store;
}

std::vector<GcEntry> plan_gc(std::span<const ShmObject> objects, const std::set<std::string>& live_stores, uint32_t uid,
                             int64_t min_age_s) {
  std::vector<GcEntry> out;
  for (const auto& o : objects) {
    auto store = segment_store_of(o.name);
    if (!store) continue;
    GcEntry e{o.name, *store, o.bytes, GcVerdict::remove};
    // Order matters: another user's object is refused even when its store is live or it is young.
    if (!o.regular || o.uid != uid) {
      e.verdict = GcVerdict::refused;
    } else if (live_stores.contains(*store)) {
      e.verdict = GcVerdict::in_use;
    } else if (o.age_s < min_age_s) {
      e.verdict = GcVerdict::too_young;
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const GcEntry& a, const GcEntry& b) { return a.name < b.name; });
  return out;
}

std::vector<ShmObject> list_shm_objects(const std::string& dir) {
  std::vector<ShmObject> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  const auto now = std::time(nullptr);
  while (const dirent* entry = ::readdir(d)) {
    const std::string file = entry->d_name;
    if (file == "." || file == "..") continue;
    struct stat st {};
    if (::lstat((dir + "/" + file).c_str(), &st) != 0) continue;  // gone meanwhile
    out.push_back(ShmObject{file, S_ISREG(st.st_mode), st.st_uid, static_cast<uint64_t>(st.st_size),
                            static_cast<int64_t>(now - st.st_mtime)});
  }
  ::closedir(d);
  return out;
}

}  // namespace shoal::ckpt
