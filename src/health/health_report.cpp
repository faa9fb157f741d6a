// Encoding a JobHealth into bounded `health-report` lines, checking them, and putting the parts together.
#include "health/health_report.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <set>

#include "base/member_name.hpp"
#include "health/straggler_judge.hpp"

namespace shoal::health {
namespace {

constexpr const char* kVersion = "1";
constexpr size_t kHeaderWords = 12;  // version .. rule

std::string figure(double ms) { return fmt::format("{:.3f}", ms); }

std::string rule_word(const StragglerOptions& r) {
  return fmt::format("{},{},{},{},{},{},{},{}", r.factor, r.min_excess_ms, r.clear_factor, r.window_steps,
                     r.min_samples, r.raise_after, r.clear_after, r.exchange_every);
}

std::string header(const JobHealth& h, uint32_t slot, size_t part, size_t parts) {
  return fmt::format("{} {} {} {} {} {} {} {} {} {} {} {} {}", kHealthReportRequest, kVersion, slot, part, parts,
                     h.epoch, h.step, h.evaluations, h.authenticated ? 1 : 0, h.dropped_records, h.dropped_figures,
                     h.forged_records, rule_word(h.rule));
}

std::string host_word(const HostHealth& h) {
  return fmt::format("{},{},{},{},{}", figure(h.compute_ms), figure(h.wait_ms), h.samples, h.straggler ? 1 : 0, h.name);
}

template <typename T>
std::optional<T> whole(std::string_view text, T max) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v > max) return std::nullopt;
  return v;
}

std::optional<double> real(std::string_view text, double max) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0 || v > max) {
    return std::nullopt;
  }
  return v;
}

// `text` split at its first `n - 1` commas (the last field keeps any further commas).
std::optional<std::vector<std::string_view>> fields(std::string_view text, size_t n) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < n) {
    const auto comma = text.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    out.push_back(text.substr(0, comma));
    text.remove_prefix(comma + 1);
  }
  out.push_back(text);
  return out;
}

std::optional<StragglerOptions> parse_rule(std::string_view text) {
  const auto f = fields(text, 8);
  if (!f || (*f)[7].find(',') != std::string_view::npos) return std::nullopt;
  StragglerOptions r;
  const auto factor = real((*f)[0], 1e6), excess = real((*f)[1], kMaxReportFigureMs), clear = real((*f)[2], 1e6);
  const auto window = whole<uint32_t>((*f)[3], 1u << 20), samples = whole<uint32_t>((*f)[4], 1u << 20);
  const auto raise = whole<uint32_t>((*f)[5], 1u << 20), clear_after = whole<uint32_t>((*f)[6], 1u << 20);
  const auto every = whole<uint32_t>((*f)[7], 1u << 20);
  if (!factor || !excess || !clear || !window || !samples || !raise || !clear_after || !every) return std::nullopt;
  r.factor = *factor;
  r.min_excess_ms = *excess;
  r.clear_factor = *clear;
  r.window_steps = *window;
  r.min_samples = *samples;
  r.raise_after = *raise;
  r.clear_after = *clear_after;
  r.exchange_every = *every;
  if (check_rule(r)) return std::nullopt;
  return r;
}

std::optional<HostHealth> parse_host(std::string_view text) {
  const auto f = fields(text, 5);
  if (!f) return std::nullopt;
  const auto compute = real((*f)[0], kMaxReportFigureMs), wait = real((*f)[1], kMaxReportFigureMs);
  const auto samples = whole<uint32_t>((*f)[2], 1u << 20), straggler = whole<uint32_t>((*f)[3], 1);
  if (!compute || !wait || !samples || !straggler) return std::nullopt;
  HostHealth h;
  h.name = std::string((*f)[4]);
  if (!check_member_name(h.name)) return std::nullopt;
  h.compute_ms = *compute;
  h.wait_ms = *wait;
  h.samples = *samples;
  h.straggler = *straggler == 1;
  return h;
}

bool same_header(const JobHealth& a, const JobHealth& b) {
  const auto& x = a.rule;
  const auto& y = b.rule;
  return a.epoch == b.epoch && a.step == b.step && a.evaluations == b.evaluations &&
         a.authenticated == b.authenticated && a.dropped_records == b.dropped_records &&
         a.dropped_figures == b.dropped_figures && a.forged_records == b.forged_records && x.factor == y.factor &&
         x.min_excess_ms == y.min_excess_ms && x.clear_factor == y.clear_factor && x.window_steps == y.window_steps &&
         x.min_samples == y.min_samples && x.raise_after == y.raise_after && x.clear_after == y.clear_after &&
         x.exchange_every == y.exchange_every;
}

}  // namespace

std::vector<std::string> encode_health_report(const JobHealth& health, uint32_t slot) {
  if (health.hosts.size() > kMaxReportHosts) return {};
  // Split with the widest part numbers, then write each part's header with its own.
  const size_t room = kMaxReportLineBytes - header(health, slot, kMaxReportHosts, kMaxReportHosts).size();
  std::vector<std::string> bodies(1);
  for (const auto& h : health.hosts) {
    // Built by appending, not as `" " + host_word(h)`: GCC 12 at -O3 (the wheel's release build) reports
    // a false -Wrestrict overlap in operator+(const char*, string&&) (GCC bug 105329).
    std::string word(1, ' ');
    word += host_word(h);
    if (!bodies.back().empty() && bodies.back().size() + word.size() > room) bodies.emplace_back();
    bodies.back() += word;
  }
  std::vector<std::string> lines;
  for (size_t i = 0; i < bodies.size(); ++i) lines.push_back(header(health, slot, i, bodies.size()) + bodies[i]);
  return lines;
}

Result<ReportPart> parse_health_report(std::span<const std::string> args) {
  if (args.size() < kHeaderWords) return fail("health-report: too few words");
  if (args[0] != kVersion) return fail("health-report: version '" + args[0] + "' is not 1");
  if (args.size() - kHeaderWords > kMaxReportHosts) return fail("health-report: too many hosts");
  const auto slot = whole<uint32_t>(args[1], kMaxReportSlots - 1);
  const auto part = whole<uint32_t>(args[2], kMaxReportHosts - 1);
  const auto parts = whole<uint32_t>(args[3], kMaxReportHosts);
  if (!slot || !part || !parts || *parts == 0 || *part >= *parts) return fail("health-report: bad slot or part numbers");
  ReportPart p;
  p.slot = *slot;
  p.part = *part;
  p.parts = *parts;
  auto& h = p.health;
  const auto epoch = whole<uint64_t>(args[4], UINT64_MAX), step = whole<uint64_t>(args[5], UINT64_MAX);
  const auto evaluations = whole<uint64_t>(args[6], UINT64_MAX);
  const auto auth = whole<uint32_t>(args[7], 1);
  const auto records = whole<uint64_t>(args[8], UINT64_MAX), figures = whole<uint64_t>(args[9], UINT64_MAX);
  const auto forged = whole<uint64_t>(args[10], UINT64_MAX);
  if (!epoch || !step || !evaluations || !auth || !records || !figures || !forged) {
    return fail("health-report: bad header numbers");
  }
  const auto rule = parse_rule(args[11]);
  if (!rule) return fail("health-report: bad straggler rule '" + args[11].substr(0, 80) + "'");
  h.epoch = *epoch;
  h.step = *step;
  h.evaluations = *evaluations;
  h.authenticated = *auth == 1;
  h.dropped_records = *records;
  h.dropped_figures = *figures;
  h.forged_records = *forged;
  h.rule = *rule;
  for (size_t i = kHeaderWords; i < args.size(); ++i) {
    auto host = parse_host(args[i]);
    if (!host) return fail("health-report: bad host figures '" + args[i].substr(0, 80) + "'");
    if (host->straggler) h.stragglers.push_back(host->name);
    h.hosts.push_back(std::move(*host));
  }
  return p;
}

Result<std::optional<JobHealth>> ReportAssembler::add(ReportPart part) {
  const auto slot = part.slot;
  auto held = held_.find(slot);
  if (part.part == 0) {
    if (held != held_.end()) held_.erase(held);
    held = held_.emplace(slot, std::move(part)).first;
  } else {
    if (held == held_.end() || held->second.part + 1 != part.part || held->second.parts != part.parts ||
        !same_header(held->second.health, part.health)) {
      if (held != held_.end()) held_.erase(held);
      return fail("health-report: part " + std::to_string(part.part) + " of slot " + std::to_string(slot) +
                  " out of order");
    }
    auto& whole = held->second;
    if (whole.health.hosts.size() + part.health.hosts.size() > kMaxReportHosts) {
      held_.erase(held);
      return fail("health-report: too many hosts");
    }
    whole.part = part.part;
    for (auto& h : part.health.hosts) whole.health.hosts.push_back(std::move(h));
    for (auto& s : part.health.stragglers) whole.health.stragglers.push_back(std::move(s));
  }
  if (held->second.part + 1 < held->second.parts) return std::optional<JobHealth>{};
  JobHealth done = std::move(held->second.health);
  held_.erase(held);
  std::set<std::string> names;
  for (const auto& h : done.hosts) {
    if (!names.insert(h.name).second) return fail("health-report: host " + h.name + " named twice");
  }
  return std::optional<JobHealth>(std::move(done));
}

}  // namespace shoal::health
