// The speed scenario: how fast the simulator runs a large cluster in steady state. Members start
// warm (each core is handed the roster of all, see ClusterOptions::warm_start) so that the figure
// measures ten virtual minutes of protocol, not the N^2 work of a join; every datagram is still
// encoded and decoded as on the wire, and invariants are checked after every event.
#include <chrono>
#include <fstream>
#include <string>

#include "scenario.hpp"

namespace shoal::sim {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The process's peak resident memory in MB (Linux's VmHWM), or 0 when unreadable.
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  }
  return 0;
}

}  // namespace

ScenarioOutcome run_speed(const ScenarioInputs& in) {
  ScenarioOutcome out;
  const size_t n = in.n_given ? in.n : 10000;
  out.n = n;
  const double length_s = in.virtual_s.value_or(600);
  double setup_wall_s = 0, run_wall_s = 0;
  uint64_t datagrams = 0, events = 0, false_removals = 0;
  bool all_alive_at_end = true;
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    ScenarioInputs sized = in;
    sized.n = n;
    ClusterOptions opts = cluster_options(sized, r);
    opts.warm_start = true;
    Cluster c(opts);
    std::vector<uint8_t> removed(n, 0);
    EventTap tap;
    tap.event = [&](uint32_t, uint32_t subject, const gossip::MemberEvent& ev, Time) {
      if (ev.member.state == gossip::State::dead || ev.member.state == gossip::State::left) removed[subject] = 1;
    };
    c.add_observer(&tap);
    c.start_all(Time(0));
    c.run_until(Time(0));
    if (c.ok() && !c.ledger().all_know_all()) out.error = "a warm start left some member not knowing all others";
    setup_wall_s += since(t0);
    if (c.ok() && !out.error) {
      c.network().defaults().loss = in.loss.value_or(0);
      uint64_t packets_before = 0;
      for (uint32_t m = 0; m < c.size(); ++m) packets_before += c.counters(m).packets_in;
      const uint64_t events_before = c.events_processed();
      const auto t1 = std::chrono::steady_clock::now();
      c.run_until(c.now() + seconds(length_s));
      run_wall_s += since(t1);
      for (uint32_t m = 0; m < c.size(); ++m) datagrams += c.counters(m).packets_in;
      datagrams -= packets_before;
      events += c.events_processed() - events_before;
      all_alive_at_end = all_alive_at_end && c.ledger().all_know_all();
    }
    for (uint8_t x : removed) false_removals += x;
    finish_run(c, out);
  }
  const double member_s = double(n) * length_s * double(in.runs);
  out.figures.count("members", n);
  out.figures.number("loss", in.loss.value_or(0));
  out.figures.number("measured_s", length_s);
  out.figures.number("setup_wall_s", setup_wall_s);
  out.figures.number("run_wall_s", run_wall_s);
  out.figures.count("datagrams", datagrams);
  out.figures.count("events", events);
  out.figures.number("us_per_datagram", datagrams == 0 ? 0.0 : run_wall_s * 1e6 / double(datagrams));
  out.figures.number("us_per_member_s", member_s == 0 ? 0.0 : run_wall_s * 1e6 / member_s);
  out.figures.number("virtual_per_wall", run_wall_s == 0 ? 0.0 : length_s * double(in.runs) / run_wall_s);
  out.figures.count("false_removals", false_removals);
  out.figures.flag("all_alive_at_end", all_alive_at_end);
  out.figures.number("peak_rss_mb", peak_rss_mb());
  return out;
}

}  // namespace shoal::sim
