// The `health` reply: node health as this agent's local trainer last measured and judged it (the figures
// and the straggler verdict every rank of the view shares), for `shoal health` and scripts:
//   {"self", "reported", "epoch", "step", "evaluations", "age_s"?,
//    "hosts": [{"name", "compute_ms", "wait_ms", "samples", "straggler"}...],
//    "stragglers": [names], "changes", "dropped": {"records", "figures", "forged"}, "authenticated", "eviction",
//    "rule": {"factor", "min_excess_ms", "clear_factor", "window_steps", "min_samples", "raise_after",
//             "clear_after", "exchange_every"}}
// "reported" is false (and "hosts" empty) until a local trainer's session has reported figures.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/replies/document.hpp"

namespace shoal::control {

struct HealthHostRow {
  std::string name;
  double compute_ms = 0;  // median per step outside collectives, over the rule's window
  double wait_ms = 0;     // median per step inside collectives
  uint32_t samples = 0;   // step figures in the window
  bool straggler = false;
  bool operator==(const HealthHostRow&) const = default;
};

struct HealthDropped {
  uint64_t records = 0;  // ranks' timing records refused whole
  uint64_t figures = 0;  // step figures out of range
  uint64_t forged = 0;   // ranks' timing records whose cluster-key tag did not verify
  bool operator==(const HealthDropped&) const = default;
};

struct HealthRule {
  double factor = 0;
  double min_excess_ms = 0;
  double clear_factor = 0;
  uint32_t window_steps = 0, min_samples = 0, raise_after = 0, clear_after = 0, exchange_every = 0;
  bool operator==(const HealthRule&) const = default;
};

struct HealthReply {
  static constexpr const char* kWhat = "an agent's node health";
  static constexpr std::array kRequiredKeys{"self", "hosts"};
  std::string self;
  bool reported = false;
  uint64_t epoch = 0;
  uint64_t step = 0;
  uint64_t evaluations = 0;
  std::optional<double> age_s;  // seconds since the report; absent when none came
  std::vector<HealthHostRow> hosts;
  std::vector<std::string> stragglers;
  uint64_t changes = 0;  // changes of the straggler list this agent has seen
  HealthDropped dropped;
  bool authenticated = false;  // the figures were sealed with the cluster key and verified
  std::string eviction;        // as in the status reply's health: "off", or what eviction does now
  HealthRule rule;
  bool operator==(const HealthReply&) const = default;
};

void to_json(Json& j, const HealthHostRow& r);
void from_json(const Json& j, HealthHostRow& r);
void to_json(Json& j, const HealthDropped& r);
void from_json(const Json& j, HealthDropped& r);
void to_json(Json& j, const HealthRule& r);
void from_json(const Json& j, HealthRule& r);
void to_json(Json& j, const HealthReply& r);
void from_json(const Json& j, HealthReply& r);

}  // namespace shoal::control
