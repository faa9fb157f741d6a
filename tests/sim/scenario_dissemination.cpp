// Dissemination scenarios: spread (one update to 99.9% of members), load (bytes per member per second
// in steady state) and join (everyone starting within a second until all know all).
#include <algorithm>
#include <cmath>

#include "rng.hpp"
#include "scenario.hpp"

namespace shoal::sim {
namespace {

constexpr double kConvergeS = 120;

}  // namespace

ScenarioOutcome run_spread(const ScenarioInputs& in) {
  ScenarioOutcome out;
  const bool join = in.update == "join";
  if (!join && in.update != "leave") {
    out.error = "unknown --update '" + in.update + "' (leave or join)";
    return out;
  }
  std::vector<double> spread_ms;
  uint64_t unfinished = 0;
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    Cluster c(cluster_options(in, r));
    SimRng rng(derive_seed(in.seed + r, 0x737072656164));
    uint32_t subject_of_update = UINT32_MAX;
    std::optional<Time> reached_at;
    // The share of the other live members that must show the update.
    auto reached = [&](uint32_t m, uint32_t gen) {
      const auto& l = c.ledger();
      const size_t shown =
          join ? l.count_showing(m, gen, gossip::State::alive)
               : l.count_showing(m, gen, gossip::State::left) + l.count_showing(m, gen, gossip::State::dead);
      const auto need = static_cast<size_t>(std::ceil(0.999 * static_cast<double>(l.live_tracked_others(m))));
      return need > 0 && shown >= need;
    };
    EventTap tap;
    tap.event = [&](uint32_t, uint32_t subject, const gossip::MemberEvent& ev, Time now) {
      if (subject != subject_of_update || reached_at || ev.member.id.generation != c.generation(subject)) return;
      if (reached(subject, c.generation(subject))) reached_at = now;
    };
    c.add_observer(&tap);
    if (converge(c, out, seconds(kConvergeS))) {
      c.network().defaults().loss = in.loss.value_or(0);
      for (size_t k = 0; k < in.repeat && c.ok(); ++k) {
        c.run_until(c.now() + seconds(2));
        reached_at.reset();
        const Time t0 = c.now();
        if (join) {
          subject_of_update = c.add_member();
          c.start(subject_of_update, t0);
        } else {
          std::vector<uint32_t> running;
          for (uint32_t m = 0; m < c.size(); ++m) {
            if (c.status(m) == MemberStatus::running && c.ledger().live(m)) running.push_back(m);
          }
          if (running.size() < 3) break;
          subject_of_update = running[rng.below(running.size())];
          c.leave(subject_of_update);
        }
        c.run_until(t0 + seconds(120), Time(10000), [&] { return reached_at.has_value(); });
        if (reached_at) {
          spread_ms.push_back(to_ms(*reached_at - t0));
        } else {
          ++unfinished;
        }
      }
    }
    finish_run(c, out);
  }
  out.figures.text("update", in.update);
  out.figures.number("loss", in.loss.value_or(0));
  out.figures.count("updates", spread_ms.size() + unfinished);
  out.figures.count("unfinished", unfinished);
  add_ms(out.figures, "spread_999_ms", percentile(spread_ms, 50));
  add_ms(out.figures, "spread_999_p99_ms", percentile(spread_ms, 99));
  add_ms(out.figures, "spread_999_max_ms", percentile(spread_ms, 100));
  return out;
}

ScenarioOutcome run_load(const ScenarioInputs& in) {
  ScenarioOutcome out;
  const double length_s = in.virtual_s.value_or(60);
  // Steady state: after the join's updates have drained from every broadcast queue (at thousands of
  // members that takes longer than the join itself), and at least 10 s.
  const double warmup_min_s = 10, warmup_max_s = 600;
  std::vector<double> warmups;
  // Per member and second, pooled over runs.
  std::vector<double> in_rate, out_rate, udp_out_rate, packets_out_rate, stream_out_rate;
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    Cluster c(cluster_options(in, r));
    if (converge(c, out, seconds(kConvergeS))) {
      c.network().defaults().loss = in.loss.value_or(0);
      const Time warm_from = c.now();
      c.run_until(warm_from + seconds(warmup_min_s));
      c.run_until(warm_from + seconds(warmup_max_s), seconds(1), [&] {
        for (uint32_t m = 0; m < c.size(); ++m) {
          const gossip::Swim* core = c.core(m);
          if (core != nullptr && core->queued_updates() > 0) return false;
        }
        return true;
      });
      warmups.push_back(double((c.now() - warm_from).count()) / 1e6);
      std::vector<MemberCounters> before(c.size());
      for (uint32_t m = 0; m < c.size(); ++m) before[m] = c.counters(m);
      c.run_until(c.now() + seconds(length_s));
      for (uint32_t m = 0; m < c.size(); ++m) {
        if (c.status(m) != MemberStatus::running) continue;
        const MemberCounters& a = before[m];
        const MemberCounters& b = c.counters(m);
        in_rate.push_back(double(b.bytes_in - a.bytes_in + b.stream_bytes_in - a.stream_bytes_in) / length_s);
        out_rate.push_back(double(b.bytes_out - a.bytes_out + b.stream_bytes_out - a.stream_bytes_out) / length_s);
        udp_out_rate.push_back(double(b.bytes_out - a.bytes_out) / length_s);
        stream_out_rate.push_back(double(b.stream_bytes_out - a.stream_bytes_out) / length_s);
        packets_out_rate.push_back(double(b.packets_out - a.packets_out) / length_s);
      }
    }
    finish_run(c, out);
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? std::nan("") : s / double(v.size());
  };
  out.figures.number("loss", in.loss.value_or(0));
  out.figures.number("measured_s", length_s);
  out.figures.number("warmup_s_max", warmups.empty() ? 0.0 : *std::max_element(warmups.begin(), warmups.end()));
  out.figures.number("bytes_in_per_s_mean", mean(in_rate));
  out.figures.number("bytes_out_per_s_mean", mean(out_rate));
  add_ms(out.figures, "bytes_out_per_s_max", percentile(out_rate, 100));
  out.figures.number("udp_bytes_out_per_s_mean", mean(udp_out_rate));
  out.figures.number("stream_bytes_out_per_s_mean", mean(stream_out_rate));
  out.figures.number("packets_out_per_s_mean", mean(packets_out_rate));
  return out;
}

ScenarioOutcome run_join(const ScenarioInputs& in) {
  ScenarioOutcome out;
  const double limit_s = in.virtual_s.value_or(300);
  std::vector<double> join_ms;
  uint64_t unfinished = 0;
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    Cluster c(cluster_options(in, r));
    SimRng rng(derive_seed(in.seed + r, 0x6a6f696e));
    for (uint32_t m = 0; m < in.n; ++m) c.start(m, Time(static_cast<int64_t>(rng.below(1000000))));
    c.network().defaults().loss = in.loss.value_or(0);
    // Members not started yet are not expected in anyone's view: wait until all have started.
    const bool done = c.run_until(seconds(limit_s), Time(1000),
                                  [&] { return c.ledger().live_count() == in.n && c.ledger().all_know_all(); });
    if (done) {
      join_ms.push_back(to_ms(c.now()));
    } else if (c.ok()) {
      ++unfinished;
    }
    finish_run(c, out);
  }
  out.figures.number("loss", in.loss.value_or(0));
  out.figures.number("limit_s", limit_s);
  out.figures.count("unfinished", unfinished);
  add_ms(out.figures, "join_all_ms", percentile(join_ms, 50));
  add_ms(out.figures, "join_all_max_ms", percentile(join_ms, 100));
  return out;
}

}  // namespace shoal::sim
