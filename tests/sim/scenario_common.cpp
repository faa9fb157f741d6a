// What the scenarios share: JSON lines, cluster options from the inputs, convergence, percentiles,
// and the table of scenarios.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "scenario.hpp"

namespace shoal::sim {

void JsonLine::number(const std::string& key, double v) {
  if (!std::isfinite(v)) {
    null(key);
    return;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();  // 12.500 -> 12.5, 3.000 -> 3
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  fields_.emplace_back(key, s);
}

void JsonLine::count(const std::string& key, uint64_t v) { fields_.emplace_back(key, std::to_string(v)); }

void JsonLine::text(const std::string& key, const std::string& v) {
  std::string out = "\"";
  for (char ch : v) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof(esc), "\\u%04x", ch);
          out += esc;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  fields_.emplace_back(key, out);
}

void JsonLine::flag(const std::string& key, bool v) { fields_.emplace_back(key, v ? "true" : "false"); }

void JsonLine::null(const std::string& key) { fields_.emplace_back(key, "null"); }

void JsonLine::append(const JsonLine& other) {
  fields_.insert(fields_.end(), other.fields_.begin(), other.fields_.end());
}

std::string JsonLine::str() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i > 0) out += ",";
    out += "\"" + fields_[i].first + "\":" + fields_[i].second;
  }
  return out + "}";
}

Time seconds(double s) { return Time(static_cast<int64_t>(std::llround(s * 1e6))); }

double to_ms(Time t) { return static_cast<double>(t.count()) / 1000.0; }

ClusterOptions cluster_options(const ScenarioInputs& in, size_t run) {
  ClusterOptions o;
  o.members = in.n;
  o.seed = in.seed + run;
  o.link.delay = seconds(in.delay_ms / 1000.0);
  o.link.jitter = seconds(in.jitter_ms / 1000.0);
  o.max_tracked_observers = in.max_tracked;
  o.revival = in.revival;
  return o;
}

bool converge(Cluster& c, ScenarioOutcome& outcome, Time deadline) {
  c.start_all(Time(0));
  const bool done = c.run_until(deadline, Time(1000), [&] { return c.ledger().all_know_all(); });
  if (!c.ok()) {
    outcome.error = *c.violation();
    return false;
  }
  if (!done) {
    outcome.error = "the cluster did not converge (all members alive in every view) within " +
                    std::to_string(deadline.count() / 1000000) + " virtual seconds";
    return false;
  }
  return true;
}

std::optional<double> percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

void add_ms(JsonLine& line, const std::string& key, std::optional<double> ms) {
  if (ms) {
    line.number(key, *ms);
  } else {
    line.null(key);
  }
}

void finish_run(Cluster& c, ScenarioOutcome& outcome) {
  TraceHash h;
  h.mix(outcome.trace_hash);
  h.mix(c.trace().value());
  outcome.trace_hash = h.value();
  outcome.virtual_s += static_cast<double>(c.now().count()) / 1e6;
  if (!c.ok() && !outcome.error) outcome.error = *c.violation();
}

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> table = {
      {"crash", "members crash one at a time: time to the first suspicion anywhere and to dead at every member",
       run_crash},
      {"loss", "uniform datagram loss (default 10%) for a long time (default 1 h): live members declared dead",
       run_loss},
      {"stall", "a share of members (default 10%) paused 1.5 s every 10 s: never-paused members declared dead",
       run_stall},
      {"spread", "one update (a leave, or a join) until 99.9% of members show it", run_spread},
      {"load", "bytes per member per second in and out in steady state", run_load},
      {"join", "all members start within one second: time until all know all", run_join},
      {"speed", "warm start (default 10000 members), steady state for --virtual-s (default 600): wall time", run_speed},
      {"view-crash", "view keepers: a member crashes; time until every survivor holds a view without it",
       run_view_crash},
      {"view-rack",
       "view keepers: --rack members (default 32) crash at one instant: views until every survivor "
       "holds one without any of them, and the time",
       run_view_rack},
      {"view-joins",
       "view keepers: --joiners members (default 16) join an agreed view one every --join-every-ms: views "
       "committed until every member holds all of them, and the time",
       run_view_joins},
      {"view-leave", "view keepers: a member leaves gracefully; time until every survivor holds a view without it",
       run_view_leave},
      {"view-safety", "view keepers under churn, seeded (--seeds, default 1000): divergences, minority commits",
       run_view_safety},
      {"bootstrap", "view keepers: N (default 2000) start within one second: time to one view holding all",
       run_bootstrap},
  };
  return table;
}

const Scenario* find_scenario(const std::string& name) {
  for (const Scenario& s : scenarios()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

}  // namespace shoal::sim
