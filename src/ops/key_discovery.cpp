// The cluster key's known places, in order.
#include "ops/key_discovery.hpp"

#include <sys/stat.h>

namespace shoal::ops {
namespace {

std::optional<std::string> value(const Environment& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// lstat: a link in a known place is found, and then refused by load_key_file with a sentence saying why,
// rather than passed over in silence.
bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

std::optional<FoundKey> discover_key_file(const Environment& env, const SlurmDefaults& slurm) {
  if (auto path = value(env, "SHOAL_KEY_FILE")) return FoundKey{*path, "SHOAL_KEY_FILE"};
  if (auto dir = value(env, "CREDENTIALS_DIRECTORY")) {
    const std::string path = *dir + "/cluster.key";
    if (exists(path)) return FoundKey{path, "the systemd credential cluster.key"};
  }
  if (slurm.under_slurm && !slurm.job_id.empty()) {
    if (auto home = value(env, "HOME")) {
      const std::string path = *home + "/.shoal/job-" + slurm.job_id + ".key";
      if (exists(path)) return FoundKey{path, "the Slurm job's key"};
    }
  }
  return std::nullopt;
}

}  // namespace shoal::ops
