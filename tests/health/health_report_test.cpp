// The `health-report` request: a JobHealth round-trips through its bounded lines (split into parts when
// it does not fit one), and a malformed, out-of-range or out-of-order part is refused, never trusted.
#include "health/health_report.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

using namespace shoal;
using namespace shoal::health;

namespace {

JobHealth sample(size_t hosts, size_t name_bytes = 8) {
  JobHealth h;
  h.epoch = 7;
  h.step = 123;
  h.evaluations = 4;
  h.authenticated = true;
  h.dropped_records = 1;
  h.dropped_figures = 2;
  h.forged_records = 3;
  h.rule.factor = 1.3;
  h.rule.exchange_every = 4;
  for (size_t i = 0; i < hosts; ++i) {
    HostHealth x;
    x.name = "h" + std::to_string(i) + std::string(name_bytes, 'x');
    x.compute_ms = 10.25 + static_cast<double>(i);
    x.wait_ms = 0.5;
    x.samples = 10;
    x.straggler = i % 5 == 1;
    if (x.straggler) h.stragglers.push_back(x.name);
    h.hosts.push_back(x);
  }
  return h;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  CHECK(out.front() == kHealthReportRequest);
  out.erase(out.begin());
  return out;
}

std::optional<JobHealth> assemble(ReportAssembler& a, const std::vector<std::string>& lines) {
  std::optional<JobHealth> done;
  for (const auto& line : lines) {
    auto part = parse_health_report(words(line));
    REQUIRE(part);
    auto r = a.add(std::move(*part));
    REQUIRE(r);
    if (*r) done = std::move(**r);
  }
  return done;
}

void check_same(const JobHealth& a, const JobHealth& b) {
  CHECK(a.epoch == b.epoch);
  CHECK(a.step == b.step);
  CHECK(a.evaluations == b.evaluations);
  CHECK(a.authenticated == b.authenticated);
  CHECK(a.dropped_records == b.dropped_records);
  CHECK(a.dropped_figures == b.dropped_figures);
  CHECK(a.forged_records == b.forged_records);
  CHECK(a.rule.factor == b.rule.factor);
  CHECK(a.rule.exchange_every == b.rule.exchange_every);
  CHECK(a.stragglers == b.stragglers);
  REQUIRE(a.hosts.size() == b.hosts.size());
  for (size_t i = 0; i < a.hosts.size(); ++i) {
    CHECK(a.hosts[i].name == b.hosts[i].name);
    CHECK(a.hosts[i].compute_ms == doctest::Approx(b.hosts[i].compute_ms).epsilon(1e-6));
    CHECK(a.hosts[i].wait_ms == doctest::Approx(b.hosts[i].wait_ms).epsilon(1e-6));
    CHECK(a.hosts[i].samples == b.hosts[i].samples);
    CHECK(a.hosts[i].straggler == b.hosts[i].straggler);
  }
}

}  // namespace

TEST_CASE("a small job's report is one line under the control socket's limit and round-trips") {
  const auto h = sample(4);
  const auto lines = encode_health_report(h, 2);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].size() <= kMaxReportLineBytes);
  ReportAssembler a;
  const auto back = assemble(a, lines);
  REQUIRE(back);
  check_same(*back, h);
  CHECK(parse_health_report(words(lines[0]))->slot == 2);
}

TEST_CASE("a report of many hosts with long names is split into bounded parts and put back together") {
  for (const size_t hosts : {0, 1, 30, 200}) {
    const auto h = sample(hosts, 120);
    const auto lines = encode_health_report(h, 0);
    REQUIRE_FALSE(lines.empty());
    for (const auto& l : lines) CHECK(l.size() <= kMaxReportLineBytes);
    ReportAssembler a;
    const auto back = assemble(a, lines);
    REQUIRE(back);
    check_same(*back, h);
  }
  CHECK(encode_health_report(sample(kMaxReportHosts + 1, 0), 0).empty());
}

TEST_CASE("a part out of order, from another report, or repeated is refused and forgets the held report") {
  const auto lines = encode_health_report(sample(60, 120), 0);
  REQUIRE(lines.size() >= 3);
  ReportAssembler a;
  CHECK_FALSE(a.add(*parse_health_report(words(lines[1]))));  // no part 0 held
  REQUIRE(a.add(*parse_health_report(words(lines[0]))));
  CHECK_FALSE(a.add(*parse_health_report(words(lines[2]))));  // skips part 1
  CHECK_FALSE(a.add(*parse_health_report(words(lines[1]))));  // the held report was forgotten
  // Another report's part 1 after this one's part 0 (a different step).
  auto other = sample(60, 120);
  other.step = 124;
  const auto other_lines = encode_health_report(other, 0);
  REQUIRE(a.add(*parse_health_report(words(lines[0]))));
  CHECK_FALSE(a.add(*parse_health_report(words(other_lines[1]))));
  // Slots are held apart: slot 1's parts interleave with slot 0's.
  const auto slot1 = encode_health_report(other, 1);
  REQUIRE(a.add(*parse_health_report(words(lines[0]))));
  REQUIRE(a.add(*parse_health_report(words(slot1[0]))));
  for (size_t i = 1; i < lines.size(); ++i) {
    REQUIRE(a.add(*parse_health_report(words(lines[i]))));
    REQUIRE(a.add(*parse_health_report(words(slot1[i]))));
  }
}

TEST_CASE("a malformed part is refused: version, counts, rule, figures, names") {
  const auto good = words(encode_health_report(sample(2), 0)[0]);
  REQUIRE(parse_health_report(good));
  const auto with = [&](size_t i, std::string w) {
    auto v = good;
    v[i] = std::move(w);
    return parse_health_report(v);
  };
  CHECK_FALSE(parse_health_report(std::vector<std::string>(good.begin(), good.begin() + 5)));
  CHECK_FALSE(with(0, "2"));                 // version
  CHECK_FALSE(with(1, "1024"));              // slot out of range
  CHECK_FALSE(with(1, "-1"));
  CHECK_FALSE(with(2, "1"));                 // part 1 of 1
  CHECK_FALSE(with(3, "0"));                 // no parts
  CHECK_FALSE(with(4, "18446744073709551616"));  // epoch overflows
  CHECK_FALSE(with(7, "2"));                 // authenticated is 0 or 1
  CHECK_FALSE(with(11, "1.2,5,1.1,10,5,2,2"));          // a rule field missing
  CHECK_FALSE(with(11, "0.5,5,1.1,10,5,2,2,5"));        // a factor check_rule refuses
  CHECK_FALSE(with(11, "nan,5,1.1,10,5,2,2,5"));
  CHECK_FALSE(with(12, "nan,1.000,10,0,h"));            // figures: finite, non-negative, in range
  CHECK_FALSE(with(12, "inf,1.000,10,0,h"));
  CHECK_FALSE(with(12, "-1.000,1.000,10,0,h"));
  CHECK_FALSE(with(12, "1e9,1.000,10,0,h"));
  CHECK_FALSE(with(12, "1.000,1.000,10,2,h"));          // straggler flag
  CHECK_FALSE(with(12, "1.000,1.000,10,0,"));           // empty name
  CHECK_FALSE(with(12, "1.000,1.000,10,0," + std::string(200, 'n')));  // too long
  CHECK_FALSE(with(12, "1.000,1.000,10"));
  CHECK(with(12, "1.000,1.000,10,1,a,b"));  // a name may hold a comma
  CHECK(with(12, "1.000,1.000,10,1,a,b")->health.stragglers.front() == "a,b");
  // The same host twice in one report.
  auto twice = good;
  twice[13] = twice[12];
  ReportAssembler a;
  CHECK_FALSE(a.add(*parse_health_report(twice)));
}
