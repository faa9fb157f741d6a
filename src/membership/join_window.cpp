// The join window's rule (join_window.hpp).
#include "membership/join_window.hpp"

namespace shoal::membership {

JoinGate join_gate(size_t view_size, uint64_t epoch, bool other_change, std::optional<Time> installed_at, Time now,
                   Time window, uint32_t from) {
  if (window <= Time(0) || epoch == 0 || view_size < from || other_change || !installed_at) return {};
  const Time opens = *installed_at + window;
  if (now >= opens) return {};
  return JoinGate{false, opens};
}

}  // namespace shoal::membership
