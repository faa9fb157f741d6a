// Building and parsing replica segment names (see replica_names.hpp).
#include "ckpt_shm/replica_names.hpp"

#include <limits>

#include "ckpt_shm/shm_segment.hpp"
#include "base/str_cat.hpp"

namespace shoal::ckpt {
namespace {

constexpr std::string_view kPrefix = "shoal.";

// A canonical decimal number up to `max`: digits only, no leading zero unless it is "0".
std::optional<uint64_t> parse_decimal(std::string_view text, uint64_t max) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (max - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace

Result<std::string> replica_segment_name(std::string_view job, uint32_t rank, uint64_t step) {
  if (auto ok = check_job_name(job); !ok) return fail(ok.error().message);
  return str_cat("/", replica_file_prefix(job), std::to_string(rank), ".s", std::to_string(step));
}

Result<std::string> spare_segment_name(std::string_view job, uint32_t rank) {
  if (auto ok = check_job_name(job); !ok) return fail(ok.error().message);
  return str_cat("/", replica_file_prefix(job), std::to_string(rank), ".spare");
}

bool is_spare_segment_name(std::string_view name, std::string_view job) {
  if (!name.empty() && name.front() == '/') name.remove_prefix(1);
  const std::string prefix = replica_file_prefix(job);
  constexpr std::string_view kSuffix = ".spare";
  if (!name.starts_with(prefix) || !name.ends_with(kSuffix)) return false;
  const std::string_view rank = name.substr(prefix.size(), name.size() - prefix.size() - kSuffix.size());
  return parse_decimal(rank, std::numeric_limits<uint32_t>::max()).has_value();
}

std::string replica_file_prefix(std::string_view job) { return std::string(kPrefix) + std::string(job) + ".p"; }

std::optional<ReplicaName> parse_replica_segment_name(std::string_view name) {
  if (!name.empty() && name.front() == '/') name.remove_prefix(1);
  if (!name.starts_with(kPrefix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  // A job name contains no '.', so the first '.' ends it.
  const size_t job_end = name.find('.');
  if (job_end == std::string_view::npos) return std::nullopt;
  const std::string_view job = name.substr(0, job_end);
  if (!check_job_name(job)) return std::nullopt;
  name.remove_prefix(job_end + 1);
  if (!name.starts_with('p')) return std::nullopt;
  name.remove_prefix(1);
  const size_t rank_end = name.find(".s");
  if (rank_end == std::string_view::npos) return std::nullopt;
  const auto rank = parse_decimal(name.substr(0, rank_end), std::numeric_limits<uint32_t>::max());
  const auto step = parse_decimal(name.substr(rank_end + 2), std::numeric_limits<uint64_t>::max());
  if (!rank || !step) return std::nullopt;
  return ReplicaName{std::string(job), static_cast<uint32_t>(*rank), *step};
}

}  // namespace shoal::ckpt
