// Holder reports checked against the view, and the sizes they promise (report_check.hpp).
#include "ckpt_shm/report_check.hpp"

#include <algorithm>

namespace shoal::ckpt {

std::vector<uint32_t> drop_foreign_reports(std::vector<HolderReport>& reports,
                                           std::span<const ExpectedHolder> expected) {
  std::vector<uint32_t> dropped;
  for (size_t r = 0; r < reports.size(); ++r) {
    HolderReport& report = reports[r];
    const bool ours = r < expected.size() && report.holder == expected[r].holder &&
                      report.address == expected[r].address;
    if (ours) continue;
    report.held.clear();
    report.address.clear();
    if (r < expected.size()) report.holder = expected[r].holder;
    dropped.push_back(static_cast<uint32_t>(r));
  }
  return dropped;
}

uint64_t promised_bytes(std::span<const HolderReport> reports, uint32_t rank, uint64_t step, size_t holder) {
  uint64_t own = 0;
  bool have_own = false;
  for (const auto& report : reports) {
    for (const auto& h : report.held) {
      if (h.local && h.rank == rank && h.step == step) {
        // Reports of one host repeat one list; two hosts claiming one rank's own copy: trust the smaller.
        own = have_own ? std::min(own, h.bytes) : h.bytes;
        have_own = true;
      }
    }
  }
  if (have_own) return own;
  return holder < reports.size() ? held_bytes(reports[holder], rank, step) : 0;
}

uint64_t held_bytes(const HolderReport& report, uint32_t rank, uint64_t step) {
  for (const auto& h : report.held) {
    if (h.rank == rank && h.step == step) return h.bytes;
  }
  return 0;
}

}  // namespace shoal::ckpt
