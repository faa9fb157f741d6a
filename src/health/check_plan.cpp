// The pre-flight check's two rounds of link pairs and its verdict (check_plan.hpp states the rules).
#include "health/check_plan.hpp"

#include <algorithm>
#include <numeric>

namespace shoal::health {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool same_pair(const LinkPair& x, const LinkPair& y) {
  return (x.a == y.a && x.b == y.b) || (x.a == y.b && x.b == y.a);
}

bool measured_before(const LinkPair& p, std::span<const LinkPair> earlier) {
  return std::any_of(earlier.begin(), earlier.end(), [&](const LinkPair& e) { return same_pair(p, e); });
}

}  // namespace

std::vector<LinkPair> first_round(size_t hosts) {
  std::vector<LinkPair> out;
  for (size_t i = 0; i + 1 < hosts; i += 2) out.push_back({i, i + 1});
  return out;
}

std::vector<LinkPair> second_round(std::span<const std::optional<double>> round1_gbps,
                                   std::span<const LinkPair> round1) {
  const size_t n = round1_gbps.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  // Slowest first; no figure counts as the slowest; ties keep the hosts' order (stable).
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const auto& fx = round1_gbps[x];
    const auto& fy = round1_gbps[y];
    if (!fx || !fy) return !fx && fy.has_value();
    return *fx < *fy;
  });
  std::vector<LinkPair> out;
  for (size_t i = 0; i < n / 2; ++i) out.push_back({order[i], order[n - 1 - i]});
  // A pair measured in round 1 (the middle pair when neighbours in the order were partners) swaps its second
  // host with a neighbour pair's, when that makes neither pair a repeat.
  for (size_t i = 0; i < out.size(); ++i) {
    if (!measured_before(out[i], round1)) continue;
    for (size_t j = 0; j < out.size(); ++j) {
      if (j == i) continue;
      LinkPair x{out[i].a, out[j].b};
      LinkPair y{out[j].a, out[i].b};
      if (!measured_before(x, round1) && !measured_before(y, round1)) {
        out[i] = x;
        out[j] = y;
        break;
      }
    }
  }
  return out;
}

std::vector<std::optional<double>> host_bandwidth(size_t hosts, std::span<const LinkPair> pairs,
                                                  std::span<const std::optional<double>> gbps) {
  std::vector<std::optional<double>> out(hosts);
  for (size_t i = 0; i < pairs.size() && i < gbps.size(); ++i) {
    if (pairs[i].a < hosts) out[pairs[i].a] = gbps[i];
    if (pairs[i].b < hosts) out[pairs[i].b] = gbps[i];
  }
  return out;
}

std::optional<std::string> check_rule_error(const CheckRule& rule) {
  if (!(rule.factor > 1.0) || !(rule.factor <= 100.0)) return std::string("the factor must be above 1 and at most 100");
  return std::nullopt;
}

CheckVerdict judge_check(std::span<const CheckHostFigure> hosts, std::span<const CheckLinkFigure> links,
                         const CheckRule& rule) {
  CheckVerdict v;
  v.hosts.resize(hosts.size());
  v.slow_links.assign(links.size(), false);

  std::vector<double> gflops;
  for (const auto& h : hosts) {
    if (h.gflops) gflops.push_back(*h.gflops);
  }
  if (!gflops.empty()) v.median_gflops = median_of(gflops);
  for (size_t i = 0; i < hosts.size(); ++i) {
    auto& hv = v.hosts[i];
    hv.unreachable = !hosts[i].answered;
    if (hosts[i].gflops && v.median_gflops && *v.median_gflops > 0) {
      const double ratio = *hosts[i].gflops / *v.median_gflops;
      hv.compute_ratio = ratio;
      hv.compute_outlier = ratio < 1.0 / rule.factor || ratio > rule.factor;
    }
  }

  std::vector<double> gbps;
  for (const auto& l : links) {
    if (l.gbps) gbps.push_back(*l.gbps);
  }
  if (!gbps.empty()) v.median_gbps = median_of(gbps);
  for (size_t i = 0; i < links.size(); ++i) {
    const auto& l = links[i];
    v.slow_links[i] = !l.gbps || (v.median_gbps && *l.gbps < *v.median_gbps / rule.factor);
  }

  // Per host: its links, how many slow, its best bandwidth.
  for (size_t i = 0; i < links.size(); ++i) {
    for (size_t end : {links[i].pair.a, links[i].pair.b}) {
      if (end >= hosts.size()) continue;
      auto& hv = v.hosts[end];
      ++hv.links;
      if (v.slow_links[i]) ++hv.slow_links;
      if (links[i].gbps && (!hv.gbps || *links[i].gbps > *hv.gbps)) hv.gbps = links[i].gbps;
    }
  }
  for (size_t h = 0; h < hosts.size(); ++h) {
    auto& hv = v.hosts[h];
    if (hv.links == 0 || hv.slow_links < hv.links) continue;
    if (hv.links >= 2) {
      hv.network_slow = true;
      continue;
    }
    // One link, slow: the host's fault when its partner has a link that is not slow.
    for (size_t i = 0; i < links.size(); ++i) {
      const auto& p = links[i].pair;
      if (p.a != h && p.b != h) continue;
      const size_t partner = p.a == h ? p.b : p.a;
      if (partner < hosts.size() && v.hosts[partner].slow_links < v.hosts[partner].links) hv.network_slow = true;
    }
  }
  for (auto& hv : v.hosts) hv.flagged = hv.unreachable || hv.compute_outlier || hv.network_slow;
  return v;
}

}  // namespace shoal::health
