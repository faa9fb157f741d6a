// Fuzz target: a `health-report` request line as the agent receives it from a local trainer
// (health::parse_health_report, then the per-slot ReportAssembler). A part is refused or holds at most
// kMaxReportHosts hosts with member names and finite figures in range; what it holds encodes into lines
// within the control socket's limit that parse and assemble back to the same hosts.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_words.hpp"
#include "health/health_report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::health;
  if (size > 4096) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> words = shoal::fuzz::words_of(text);
  auto part = parse_health_report(words);
  if (!part) return 0;
  if (part->health.hosts.size() > kMaxReportHosts || part->part >= part->parts) __builtin_trap();
  for (const auto& h : part->health.hosts) {
    if (h.name.empty() || !std::isfinite(h.compute_ms) || !std::isfinite(h.wait_ms) || h.compute_ms < 0 ||
        h.wait_ms < 0 || h.compute_ms > kMaxReportFigureMs || h.wait_ms > kMaxReportFigureMs) {
      __builtin_trap();
    }
  }
  // The held report of a slot takes the part (or refuses it) without crashing, whatever came before.
  ReportAssembler held;
  (void)held.add(*part);
  (void)held.add(*part);
  // What it holds, written again, comes back whole (when its names are distinct).
  const auto lines = encode_health_report(part->health, part->slot);
  if (lines.empty()) __builtin_trap();
  ReportAssembler again;
  std::optional<shoal::JobHealth> whole;
  for (const auto& line : lines) {
    if (line.size() > kMaxReportLineBytes) __builtin_trap();
    std::vector<std::string> w;
    size_t at = 0;
    while (at < line.size()) {
      const auto end = line.find(' ', at);
      w.push_back(line.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
    w.erase(w.begin());
    auto p = parse_health_report(w);
    if (!p) __builtin_trap();
    auto r = again.add(std::move(*p));
    if (!r) return 0;  // a name twice: refused at assembly, as intended
    if (*r) whole = std::move(**r);
  }
  if (!whole || whole->hosts.size() != part->health.hosts.size()) __builtin_trap();
  for (size_t i = 0; i < whole->hosts.size(); ++i) {
    if (whole->hosts[i].name != part->health.hosts[i].name) __builtin_trap();
  }
  return 0;
}
