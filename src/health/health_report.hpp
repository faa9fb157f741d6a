// The `health-report` control request: how a trainer that follows `shoal agent` over its control socket
// hands the agent its JobHealth (figures and straggler verdict), within the socket's 1 KiB request limit.
// A report is split into parts, each one request line of at most kMaxReportLineBytes; every part repeats
// the header (slot, part, parts, epoch, step, counters, rule) and carries a run of hosts in rank order:
//   health-report 1 SLOT PART PARTS EPOCH STEP EVALUATIONS AUTH DROPPED_RECORDS DROPPED_FIGURES FORGED
//                 FACTOR,MIN_EXCESS_MS,CLEAR_FACTOR,WINDOW,MIN_SAMPLES,RAISE_AFTER,CLEAR_AFTER,EVERY
//                 COMPUTE_MS,WAIT_MS,SAMPLES,STRAGGLER,NAME ...
// (the name last: a member name may hold a comma). The straggler list is the hosts flagged, in rank order.
// Everything a part says is checked (bounded counts, member names, finite figures in range, a usable
// rule); the assembler accepts parts of one report only in order, so at most one report per slot is held.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "shoal/health.hpp"

namespace shoal::health {

inline constexpr const char* kHealthReportRequest = "health-report";
// Under the control socket's 1024-byte request limit, newline included.
inline constexpr size_t kMaxReportLineBytes = 1000;
// Hosts in one report (a job of more hosts reports none: the figures would not be judged anyway).
inline constexpr size_t kMaxReportHosts = 4096;
// Slots one agent may hold reports of at once.
inline constexpr uint32_t kMaxReportSlots = 1024;
// A figure above this (about 2.8 hours per step) is not a step time.
inline constexpr double kMaxReportFigureMs = 1e7;

// The request lines for `health` from local slot `slot`; empty when it has more than kMaxReportHosts hosts.
std::vector<std::string> encode_health_report(const JobHealth& health, uint32_t slot);

// One part, as parsed from a request's words (the words after the request's name).
struct ReportPart {
  uint32_t slot = 0;
  uint32_t part = 0;
  uint32_t parts = 1;
  JobHealth health;  // the header's fields and this part's hosts (stragglers: this part's, in order)
};
Result<ReportPart> parse_health_report(std::span<const std::string> args);

// Puts parts back together, per slot. Pure; the agent feeds it from its control handler.
class ReportAssembler {
 public:
  // A whole report when `part` completes one; nullopt while parts are missing. A part out of order
  // (not the first, and not the next of the held report with the same header) fails, and forgets the held one.
  Result<std::optional<JobHealth>> add(ReportPart part);

 private:
  std::map<uint32_t, ReportPart> held_;  // per slot: the parts so far, merged
};

}  // namespace shoal::health
