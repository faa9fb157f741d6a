// The pre-flight check's plan and verdict (`shoal check`), as pure functions of the figures measured:
// which hosts probe their link in each of the two rounds, and which hosts and links are flagged. No clock,
// no IO; the agent measures (src/daemon/check/) and renders.
//
// Rounds: round 1 pairs the hosts in the order given ((0,1), (2,3), ...). Round 2 orders the hosts by the
// bandwidth of their round-1 link (a host without one first, as the slowest) and pairs the slowest with the
// fastest, the second slowest with the second fastest, and so on, so that a slow host meets a fast partner
// and the two rounds tell a slow host (every link of it slow) from one slow link (its two ends fine
// elsewhere). A round-2 pair that round 1 measured already swaps partners with its neighbour pair. With an
// odd count one host sits out each round: the last one in round 1, the middle one of the order in round 2
// (so every host of three or more is measured at least once).
//
// Verdict, with `factor` (> 1):
//   - compute: a host whose GFLOP/s is below median/factor or above median x factor (the median of the
//     hosts that answered) is flagged;
//   - links: a link whose bandwidth is below (median of all measured links)/factor, or that failed, is slow;
//   - network: a host that took part in at least one link, every one of them slow, is flagged when that is
//     not just its partner's fault: it had two links or more, or its one partner has a link that is not
//     slow. A single slow link between two hosts that are fine elsewhere flags the link, not the hosts.
//   - a host that did not answer its compute probe is flagged as unreachable.
// With fewer than four hosts the rounds cannot always tell a slow host from a slow link (every link
// measured may touch the slow host): the verdict then flags links only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace shoal::health {

// One link probe: host `a` sends to host `b` (indices into the check's host list).
struct LinkPair {
  size_t a = 0;
  size_t b = 0;
  bool operator==(const LinkPair&) const = default;
};

// Round 1 for `hosts` hosts.
std::vector<LinkPair> first_round(size_t hosts);

// Round 2, from each host's round-1 bandwidth (nullopt: it sat out, or its link failed, which sorts as
// the slowest) and the pairs of round 1 (not repeated where a swap avoids it).
std::vector<LinkPair> second_round(std::span<const std::optional<double>> round1_gbps,
                                   std::span<const LinkPair> round1);

// Each host's bandwidth in one round's figures: the bandwidth of the link it took part in, or nullopt.
// `gbps[i]` belongs to `pairs[i]` (nullopt: that probe failed).
std::vector<std::optional<double>> host_bandwidth(size_t hosts, std::span<const LinkPair> pairs,
                                                  std::span<const std::optional<double>> gbps);

// The figures a check gathered.
struct CheckHostFigure {
  bool answered = false;          // the host answered its compute probe at all
  std::optional<double> gflops;   // nullopt: no figure (no answer, no probe there, or dropped)
};

struct CheckLinkFigure {
  LinkPair pair;
  uint32_t round = 1;             // 1 or 2
  std::optional<double> gbps;     // nullopt: the probe failed (or its figure was dropped)
  std::optional<double> rtt_us;
};

struct CheckRule {
  double factor = 1.5;  // > 1
};

// Why `rule` cannot be used, or nullopt.
std::optional<std::string> check_rule_error(const CheckRule& rule);

struct CheckHostVerdict {
  bool flagged = false;
  bool unreachable = false;
  bool compute_outlier = false;         // outside [median/factor, median x factor]
  std::optional<double> compute_ratio;  // gflops / median
  bool network_slow = false;            // every link of it slow, not just its partner's fault
  uint32_t links = 0;                   // links it took part in
  uint32_t slow_links = 0;
  std::optional<double> gbps;           // the best bandwidth of its links
};

struct CheckVerdict {
  std::optional<double> median_gflops;
  std::optional<double> median_gbps;
  std::vector<CheckHostVerdict> hosts;  // as the host figures
  std::vector<bool> slow_links;         // as the link figures
};

// `rule` must pass check_rule_error.
CheckVerdict judge_check(std::span<const CheckHostFigure> hosts, std::span<const CheckLinkFigure> links,
                         const CheckRule& rule);

}  // namespace shoal::health
