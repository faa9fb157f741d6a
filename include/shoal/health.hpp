// Node health from the job's own steps: how long each host computes (outside collectives) and waits
// (inside them) per step, and which hosts are stragglers. ElasticLoop measures every step with a
// monotonic clock, carries the figures on the job's own collectives (one small allgather every few
// steps), so every rank of a view holds the same figures and computes the same verdict, and tells the
// local agent (`shoal health`, `shoal status`, metrics).
//
// The rule (StragglerOptions, every field documented below): a host is named a straggler when the median
// of its compute time over its last `window_steps` steps exceeds the job's median (the median of every
// host's median, itself included) by `factor` (and by at least `min_excess_ms`) at `raise_after`
// consecutive evaluations; it is cleared
// after `clear_after` consecutive evaluations below `clear_factor` (or within `min_excess_ms`). A host
// with fewer than `min_samples` figures in its window has no data and is never a straggler; a job slowed
// down as a whole has none. A view change (or a rebuild) starts every rank's figures afresh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shoal {

struct StragglerOptions {
  double factor = 1.2;          // named: median compute > factor x the job's median...
  double min_excess_ms = 5.0;   // ...and more than this above it (timer and scheduler noise is not slowness)
  double clear_factor = 1.1;    // cleared: median compute <= clear_factor x the job's (or within min_excess_ms)
  uint32_t window_steps = 10;   // the median is over each host's last window_steps steps
  uint32_t min_samples = 5;     // fewer figures than this in a host's window: no data, not slow
  uint32_t raise_after = 2;     // consecutive evaluations above the factor before a host is named
  uint32_t clear_after = 2;     // consecutive evaluations below clear_factor before it is cleared
  uint32_t exchange_every = 5;  // steps between two exchanges (and evaluations); 1..8, the same on every rank;
                                // 0: no timing exchange at all (and no verdict)
};

// One host's figures at the latest evaluation.
struct HostHealth {
  std::string name;
  double compute_ms = 0;  // median time per step outside collectives over the window (0 without data)
  double wait_ms = 0;     // median time per step inside collectives over the window
  uint32_t samples = 0;   // figures in the window
  bool straggler = false;
};

// The verdict every rank of the view holds after the latest exchange.
struct JobHealth {
  uint64_t epoch = 0;                   // the view the figures were measured in
  uint64_t step = 0;                    // the last step the latest exchange covered
  uint64_t evaluations = 0;             // exchanges since the figures last started afresh
  std::vector<HostHealth> hosts;        // in rank order
  std::vector<std::string> stragglers;  // the hosts named, in rank order
  uint64_t dropped_records = 0;         // ranks' records refused whole (bad header), since the loop started
  uint64_t dropped_figures = 0;         // single step figures out of range, since the loop started
  uint64_t forged_records = 0;          // ranks' records whose cluster-key tag did not verify (dropped whole),
                                        // since the loop started
  bool authenticated = false;           // the records are sealed with the cluster key and were verified (false
                                        // in an open cluster: the figures are then only as good as the network)
  StragglerOptions rule;                // the rule that produced it
};

}  // namespace shoal
