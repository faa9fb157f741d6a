// The exposition format's lines: families, samples, histograms.
#include "daemon/reports/metrics_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace shoal::daemon {

std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void PromText::family(const std::string& name, const std::string& help, const char* type) {
  if (std::find(seen_.begin(), seen_.end(), name) != seen_.end()) return;
  seen_.push_back(name);
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PromText::sample(const std::string& name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      out_ += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, escape_label(labels[i].second));
    }
    out_ += '}';
  }
  // Integers print without an exponent; the format reads any float.
  if (std::floor(value) == value && std::fabs(value) < 1e15) {
    out_ += fmt::format(" {}\n", static_cast<int64_t>(value));
  } else {
    out_ += fmt::format(" {}\n", value);
  }
}

void PromText::gauge(const std::string& name, const std::string& help, double value, const Labels& labels) {
  family(name, help, "gauge");
  sample(name, labels, value);
}

void PromText::counter(const std::string& name, const std::string& help, double value, const Labels& labels) {
  family(name, help, "counter");
  sample(name, labels, value);
}

void PromText::histogram(const std::string& name, const std::string& help, const std::vector<double>& bounds,
                         const std::vector<uint64_t>& counts, double sum) {
  family(name, help, "histogram");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    sample(name + "_bucket", {{"le", fmt::format("{}", bounds[i])}}, static_cast<double>(cumulative));
  }
  if (counts.size() > bounds.size()) cumulative += counts[bounds.size()];
  sample(name + "_bucket", {{"le", "+Inf"}}, static_cast<double>(cumulative));
  sample(name + "_sum", {}, sum);
  sample(name + "_count", {}, static_cast<double>(cumulative));
}

}  // namespace shoal::daemon
