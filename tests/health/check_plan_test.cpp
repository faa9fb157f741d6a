// The pre-flight check's rounds and verdict as tables: perfect pairings, slowest with fastest, odd counts,
// no repeated pair, and a slow host told apart from a slow link, a slow or fast compute, unreachable hosts.
#include "health/check_plan.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <vector>

using shoal::health::CheckHostFigure;
using shoal::health::CheckLinkFigure;
using shoal::health::CheckRule;
using shoal::health::first_round;
using shoal::health::host_bandwidth;
using shoal::health::judge_check;
using shoal::health::LinkPair;
using shoal::health::second_round;

namespace {

// Every host appears at most once, and never with itself.
bool disjoint(const std::vector<LinkPair>& pairs, size_t hosts) {
  std::set<size_t> seen;
  for (const auto& p : pairs) {
    if (p.a == p.b || p.a >= hosts || p.b >= hosts) return false;
    if (!seen.insert(p.a).second || !seen.insert(p.b).second) return false;
  }
  return true;
}

bool contains_pair(const std::vector<LinkPair>& pairs, size_t x, size_t y) {
  return std::any_of(pairs.begin(), pairs.end(),
                     [&](const LinkPair& p) { return (p.a == x && p.b == y) || (p.a == y && p.b == x); });
}

std::vector<CheckHostFigure> computes(const std::vector<double>& gflops) {
  std::vector<CheckHostFigure> out;
  for (double g : gflops) out.push_back({true, g});
  return out;
}

// Both rounds for `n` hosts where the link of pair (a, b) runs at speed(a, b).
template <class Speed>
std::vector<CheckLinkFigure> measure_both(size_t n, const Speed& speed) {
  std::vector<CheckLinkFigure> links;
  const auto r1 = first_round(n);
  std::vector<std::optional<double>> g1;
  for (const auto& p : r1) {
    g1.push_back(speed(p.a, p.b));
    links.push_back({p, 1, speed(p.a, p.b), 50.0});
  }
  const auto per_host = host_bandwidth(n, r1, g1);
  for (const auto& p : second_round(per_host, r1)) links.push_back({p, 2, speed(p.a, p.b), 50.0});
  return links;
}

}  // namespace

TEST_CASE("round 1 pairs neighbours; an odd count leaves the last host out") {
  CHECK(first_round(0).empty());
  CHECK(first_round(1).empty());
  CHECK(first_round(2) == std::vector<LinkPair>{{0, 1}});
  CHECK(first_round(5) == std::vector<LinkPair>{{0, 1}, {2, 3}});
  for (size_t n = 0; n < 40; ++n) {
    CHECK(first_round(n).size() == n / 2);
    CHECK(disjoint(first_round(n), n));
  }
}

TEST_CASE("round 2 pairs the slowest with the fastest by round-1 bandwidth") {
  // Hosts 0..3; round 1 (0,1) at 1 Gb/s and (2,3) at 10 Gb/s.
  const std::vector<LinkPair> r1 = {{0, 1}, {2, 3}};
  const std::vector<std::optional<double>> g = {1.0, 1.0, 10.0, 10.0};
  const auto r2 = second_round(g, r1);
  CHECK(r2 == std::vector<LinkPair>{{0, 3}, {1, 2}});
}

TEST_CASE("round 2 never repeats a round-1 pair when a swap avoids it, for any figures") {
  for (size_t n = 2; n <= 17; ++n) {
    const auto r1 = first_round(n);
    for (int pattern = 0; pattern < 16; ++pattern) {
      std::vector<std::optional<double>> g1;
      for (size_t i = 0; i < r1.size(); ++i) g1.push_back(1.0 + double((i * 7 + size_t(pattern)) % 5));
      const auto per_host = host_bandwidth(n, r1, g1);
      const auto r2 = second_round(per_host, r1);
      CHECK(r2.size() == n / 2);
      CHECK(disjoint(r2, n));
      if (n >= 4) {
        for (const auto& p : r2) CHECK_MESSAGE(!contains_pair(r1, p.a, p.b), "n=" << n << " pattern=" << pattern);
      }
    }
  }
}

TEST_CASE("with an odd count the host that sat out round 1 is measured in round 2") {
  for (size_t n : {3u, 5u, 7u, 9u}) {
    const auto r1 = first_round(n);
    std::vector<std::optional<double>> g1(r1.size(), 5.0);
    const auto r2 = second_round(host_bandwidth(n, r1, g1), r1);
    CHECK(std::any_of(r2.begin(), r2.end(), [&](const LinkPair& p) { return p.a == n - 1 || p.b == n - 1; }));
  }
}

TEST_CASE("a host whose every link is slow is flagged; its partners and the other hosts are not") {
  for (size_t n : {4u, 5u, 6u, 8u, 9u}) {
    for (size_t slow = 0; slow < n; ++slow) {
      const auto links = measure_both(n, [&](size_t a, size_t b) { return (a == slow || b == slow) ? 0.9 : 9.0; });
      const auto v = judge_check(computes(std::vector<double>(n, 50.0)), links, CheckRule{});
      for (size_t h = 0; h < n; ++h) {
        CHECK_MESSAGE(v.hosts[h].flagged == (h == slow), "n=" << n << " slow=" << slow << " host=" << h);
        CHECK(v.hosts[h].network_slow == (h == slow));
        CHECK_FALSE(v.hosts[h].compute_outlier);
      }
      for (size_t i = 0; i < links.size(); ++i) {
        const bool touches = links[i].pair.a == slow || links[i].pair.b == slow;
        CHECK(v.slow_links[i] == touches);
      }
    }
  }
}

TEST_CASE("one slow link between two hosts that are fine elsewhere flags the link, not the hosts") {
  const size_t n = 6;
  const auto links = measure_both(n, [](size_t a, size_t b) {
    return ((a == 2 && b == 3) || (a == 3 && b == 2)) ? 0.5 : 9.0;
  });
  const auto v = judge_check(computes(std::vector<double>(n, 50.0)), links, CheckRule{});
  size_t slow = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    if (v.slow_links[i]) {
      ++slow;
      CHECK(contains_pair({links[i].pair}, 2, 3));
    }
  }
  CHECK(slow == 1);
  for (const auto& h : v.hosts) CHECK_FALSE(h.flagged);
}

TEST_CASE("compute outside the factor of the median is flagged, on either side") {
  const std::vector<double> g = {100, 98, 102, 60, 101, 160};
  const auto v = judge_check(computes(g), {}, CheckRule{1.5});
  REQUIRE(v.median_gflops.has_value());
  CHECK(*v.median_gflops == doctest::Approx(100.5));
  CHECK_FALSE(v.hosts[0].flagged);
  CHECK(v.hosts[3].flagged);  // 60 < 100.5 / 1.5 = 67
  CHECK(v.hosts[3].compute_outlier);
  CHECK(*v.hosts[3].compute_ratio == doctest::Approx(60 / 100.5));
  CHECK(v.hosts[5].flagged);  // 160 > 150.75
  const auto loose = judge_check(computes(g), {}, CheckRule{2.0});
  for (const auto& h : loose.hosts) CHECK_FALSE(h.flagged);
}

TEST_CASE("a host that did not answer is flagged unreachable; its failed links count as slow") {
  const size_t n = 4;
  auto hosts = computes({50, 50, 50, 50});
  hosts[1] = CheckHostFigure{false, std::nullopt};
  const auto links = measure_both(n, [](size_t a, size_t b) -> std::optional<double> {
    if (a == 1 || b == 1) return std::nullopt;
    return 9.0;
  });
  const auto v = judge_check(hosts, links, CheckRule{});
  CHECK(v.hosts[1].flagged);
  CHECK(v.hosts[1].unreachable);
  CHECK(v.hosts[1].network_slow);
  for (size_t h : {0u, 2u, 3u}) CHECK_FALSE(v.hosts[h].flagged);
  REQUIRE(v.median_gflops.has_value());
  CHECK(*v.median_gflops == 50);
}

TEST_CASE("two hosts: one link is its own median, nothing is flagged for the network") {
  const auto links = measure_both(2, [](size_t, size_t) { return 0.1; });
  CHECK(links.size() == 2);
  const auto v = judge_check(computes({50, 51}), links, CheckRule{});
  for (const auto& h : v.hosts) CHECK_FALSE(h.flagged);
  for (bool s : v.slow_links) CHECK_FALSE(s);
}

TEST_CASE("the factor must lie above 1 and at most 100") {
  CHECK(shoal::health::check_rule_error(CheckRule{1.5}) == std::nullopt);
  CHECK(shoal::health::check_rule_error(CheckRule{1.0}).has_value());
  CHECK(shoal::health::check_rule_error(CheckRule{0.5}).has_value());
  CHECK(shoal::health::check_rule_error(CheckRule{1000}).has_value());
  CHECK(shoal::health::check_rule_error(CheckRule{std::numeric_limits<double>::quiet_NaN()}).has_value());
}
