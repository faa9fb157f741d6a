// The `check` reply: the pre-flight check that this agent coordinated over the members of its committed
// view (src/daemon/check/), for `shoal check` and scripts:
//   {"self", "epoch", "factor", "bytes", "max_ms", "elapsed_ms", "median_gflops", "median_gbps",
//    "hosts": [{"name", "addr", "flagged", "reasons", "answered", "gflops", "compute_ratio", "gbps",
//               "links", "slow_links", "matrix_n", "backend", "error"}...],
//    "links": [{"a", "b", "round", "gbps", "rtt_us", "rtt_min_us", "bytes", "elapsed_ms", "slow", "error"}...],
//    "flagged": [names], "slow_links": ["a-b"...], "dropped"}
// A figure that was not measured (no answer, no probe, a figure dropped as out of range) is null.
// "reasons" of a flagged host: "compute" (outside the factor of the median), "network" (every link of it
// slow), "unreachable" (no answer). "dropped" counts figures refused as out of range.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/replies/document.hpp"

namespace shoal::control {

struct CheckHostRow {
  std::string name;
  std::string addr;
  bool flagged = false;
  std::vector<std::string> reasons;
  bool answered = false;
  std::optional<double> gflops;
  std::optional<double> compute_ratio;  // gflops / the median
  std::optional<double> gbps;           // the best of its links
  uint32_t links = 0;
  uint32_t slow_links = 0;
  uint32_t matrix_n = 0;
  std::string backend;
  std::optional<std::string> error;
  bool operator==(const CheckHostRow&) const = default;
};

struct CheckLinkRow {
  std::string a;  // the sender
  std::string b;  // the receiver
  uint32_t round = 0;
  std::optional<double> gbps;
  std::optional<double> rtt_us;  // median round trip
  std::optional<double> rtt_min_us;
  uint64_t bytes = 0;
  double elapsed_ms = 0;
  bool slow = false;
  std::optional<std::string> error;
  bool operator==(const CheckLinkRow&) const = default;
};

struct CheckReply {
  static constexpr const char* kWhat = "a pre-flight check";
  static constexpr std::array kRequiredKeys{"hosts", "links"};
  std::string self;
  uint64_t epoch = 0;
  double factor = 0;
  uint64_t bytes = 0;   // per link probe, at most
  uint32_t max_ms = 0;  // per link probe, at most
  double elapsed_ms = 0;
  std::optional<double> median_gflops;
  std::optional<double> median_gbps;
  std::vector<CheckHostRow> hosts;
  std::vector<CheckLinkRow> links;
  std::vector<std::string> flagged;
  std::vector<std::string> slow_links;
  uint64_t dropped = 0;
  bool operator==(const CheckReply&) const = default;
};

void to_json(Json& j, const CheckHostRow& r);
void from_json(const Json& j, CheckHostRow& r);
void to_json(Json& j, const CheckLinkRow& r);
void from_json(const Json& j, CheckLinkRow& r);
void to_json(Json& j, const CheckReply& r);
void from_json(const Json& j, CheckReply& r);

}  // namespace shoal::control
