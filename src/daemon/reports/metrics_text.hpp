// Prometheus text exposition (format 0.0.4) of a running agent: members by state, the committed view,
// view-change durations, probe round trips, gossip traffic, refused input by cause, and checkpoints
// (saved, replicated, held, replication lag). Served on --metrics HOST:PORT at /metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shoal::daemon {

// Writes metric families: each name gets its # HELP and # TYPE lines once, before its first sample.
class PromText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  void gauge(const std::string& name, const std::string& help, double value, const Labels& labels = {});
  void counter(const std::string& name, const std::string& help, double value, const Labels& labels = {});
  // Bucket counts per upper bound (not cumulative; the last entry counts those above every bound).
  void histogram(const std::string& name, const std::string& help, const std::vector<double>& bounds,
                 const std::vector<uint64_t>& counts, double sum);
  const std::string& str() const { return out_; }

 private:
  void family(const std::string& name, const std::string& help, const char* type);
  void sample(const std::string& name, const Labels& labels, double value);

  std::string out_;
  std::vector<std::string> seen_;
};

// A label value escaped as the format wants it (backslash, double quote, newline).
std::string escape_label(const std::string& value);

}  // namespace shoal::daemon
