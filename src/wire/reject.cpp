// Names of reject causes, as they appear in logs, JSON and metrics.
#include "wire/reject.hpp"

namespace shoal::wire {

std::string_view name(RejectCause c) {
  switch (c) {
    case RejectCause::truncated: return "truncated";
    case RejectCause::bad_magic: return "bad_magic";
    case RejectCause::oversized: return "oversized";
    case RejectCause::malformed: return "malformed";
    case RejectCause::bad_version: return "bad_version";
    case RejectCause::wrong_cluster: return "wrong_cluster";
    case RejectCause::bad_auth: return "bad_auth";
    case RejectCause::no_key: return "no_key";
    case RejectCause::replayed: return "replayed";
    case RejectCause::stale: return "stale";
    case RejectCause::wrong_destination: return "wrong_destination";
    case RejectCause::overloaded: return "overloaded";
    case RejectCause::count_: break;
  }
  return "unknown";
}

uint64_t RejectCounters::total() const {
  uint64_t sum = 0;
  for (auto n : counts_) sum += n;
  return sum;
}

}  // namespace shoal::wire
