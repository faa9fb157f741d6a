// Failure scenarios: crash (detection latency), loss (false removals under uniform loss) and stall
// (false removals while some members freeze now and then); loss and stall optionally with kills and
// same-address restarts (--kill-every-s), which exercise gossip's refusal rule beside them.
#include <cmath>
#include <functional>
#include <memory>

#include "rng.hpp"
#include "scenario.hpp"

namespace shoal::sim {
namespace {

constexpr double kConvergeS = 120;

bool up(const Cluster& c, uint32_t m) {
  return c.status(m) == MemberStatus::running || c.status(m) == MemberStatus::paused;
}

// A running member chosen at random, or nullopt when none is.
std::optional<uint32_t> random_running(const Cluster& c, SimRng& rng) {
  std::vector<uint32_t> alive;
  for (uint32_t m = 0; m < c.size(); ++m) {
    if (c.status(m) == MemberStatus::running) alive.push_back(m);
  }
  if (alive.empty()) return std::nullopt;
  return alive[rng.below(alive.size())];
}

// A dead announcement about the generation of `subject` that is up now: a false removal.
bool live_generation(const Cluster& c, uint32_t subject, const gossip::MemberEvent& ev) {
  return up(c, subject) && ev.member.id.generation == c.generation(subject);
}

// With in.kill_every_s: until `end`, kills a random running member every so often and restarts it at
// the same address 0.1-0.9 s later. Counts the kills.
void schedule_kills(Cluster& c, const ScenarioInputs& in, size_t run, Time end, uint64_t& kills) {
  if (in.kill_every_s <= 0) return;
  auto rng = std::make_shared<SimRng>(derive_seed(in.seed + run, 0x6b696c6c));
  const Time every = seconds(in.kill_every_s);
  for (Time t = c.now() + every; t < end; t += every) {
    c.at(t, [&c, &kills, rng] {
      const auto victim = random_running(c, *rng);
      if (!victim) return;
      c.crash(*victim);
      ++kills;
      c.at(c.now() + Time(100000 + static_cast<int64_t>(rng->below(800000))), [&c, v = *victim] {
        if (c.status(v) == MemberStatus::crashed) c.restart(v);
      });
    });
  }
}

}  // namespace

ScenarioOutcome run_crash(const ScenarioInputs& in) {
  ScenarioOutcome out;
  std::vector<double> first_ms, all_ms;
  uint64_t crashes = 0, undetected = 0;
  const size_t per_run = std::min(in.repeat, in.n > 2 ? in.n - 2 : size_t{0});
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    Cluster c(cluster_options(in, r));
    SimRng rng(derive_seed(in.seed + r, 0x6372617368));
    uint32_t victim = UINT32_MAX;
    uint64_t victim_gen = 0;
    std::optional<Time> first_at, all_at;
    EventTap tap;
    tap.event = [&](uint32_t, uint32_t subject, const gossip::MemberEvent& ev, Time now) {
      if (subject != victim || ev.member.id.generation != victim_gen) return;
      const gossip::State s = ev.member.state;
      if (!first_at && (s == gossip::State::suspect || s == gossip::State::dead)) first_at = now;
      if (!all_at && s == gossip::State::dead &&
          c.ledger().count_showing(victim, uint32_t(victim_gen), s) >= c.ledger().live_tracked_others(victim)) {
        all_at = now;
      }
    };
    c.add_observer(&tap);
    if (converge(c, out, seconds(kConvergeS))) {
      c.network().defaults().loss = in.loss.value_or(0);
      for (size_t k = 0; k < per_run && c.ok(); ++k) {
        c.run_until(c.now() + seconds(2));  // let the previous crash settle everywhere
        const auto v = random_running(c, rng);
        if (!v) break;
        victim = *v;
        victim_gen = c.generation(victim);
        first_at.reset();
        all_at.reset();
        const Time crashed_at = c.now();
        c.crash(victim);
        c.run_until(crashed_at + seconds(300), Time(10000), [&] { return all_at.has_value(); });
        if (!c.ok()) break;
        ++crashes;
        if (first_at) first_ms.push_back(to_ms(*first_at - crashed_at));
        if (all_at) {
          all_ms.push_back(to_ms(*all_at - crashed_at));
        } else {
          ++undetected;
        }
      }
    }
    finish_run(c, out);
  }
  out.figures.number("loss", in.loss.value_or(0));
  out.figures.count("repeat", per_run);
  out.figures.count("crashes", crashes);
  out.figures.count("undetected", undetected);
  add_ms(out.figures, "detect_first_p50_ms", percentile(first_ms, 50));
  add_ms(out.figures, "detect_first_p99_ms", percentile(first_ms, 99));
  add_ms(out.figures, "dead_all_p50_ms", percentile(all_ms, 50));
  add_ms(out.figures, "dead_all_p99_ms", percentile(all_ms, 99));
  add_ms(out.figures, "dead_all_max_ms", percentile(all_ms, 100));
  return out;
}

ScenarioOutcome run_loss(const ScenarioInputs& in) {
  ScenarioOutcome out;
  const double loss = in.loss.value_or(0.1);
  const double length_s = in.virtual_s.value_or(3600);
  uint64_t false_removals = 0, false_dead_events = 0, suspect_events = 0, kills = 0, refusal_deaths_of_live = 0;
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    Cluster c(cluster_options(in, r));
    std::vector<uint8_t> removed(in.n, 0);
    EventTap tap;
    tap.event = [&](uint32_t, uint32_t subject, const gossip::MemberEvent& ev, Time) {
      // Killed members (--kill-every-s) are fair game; a restarted one's new generation is not.
      if (!live_generation(c, subject, ev)) return;
      if (ev.member.state == gossip::State::suspect) ++suspect_events;
      if (ev.member.state == gossip::State::dead) {
        ++false_dead_events;
        if (ev.member.refused) ++refusal_deaths_of_live;
        removed[subject] = 1;
      }
    };
    c.add_observer(&tap);
    if (converge(c, out, seconds(kConvergeS))) {
      c.network().defaults().loss = loss;
      const Time end = c.now() + seconds(length_s);
      schedule_kills(c, in, r, end, kills);
      c.run_until(end);
    }
    for (uint8_t x : removed) false_removals += x;
    finish_run(c, out);
  }
  out.figures.number("loss", loss);
  out.figures.number("measured_s", length_s);
  out.figures.count("false_removals", false_removals);
  out.figures.count("false_dead_events", false_dead_events);
  out.figures.count("suspect_events", suspect_events);
  out.figures.count("kills", kills);
  out.figures.count("refusal_deaths_of_live", refusal_deaths_of_live);
  return out;
}

ScenarioOutcome run_stall(const ScenarioInputs& in) {
  ScenarioOutcome out;
  const double length_s = in.virtual_s.value_or(300);
  const Time pause = seconds(in.stall_pause_s);
  const Time every = seconds(in.stall_every_s);
  uint64_t false_removals = 0, removals_of_paused = 0, pauses = 0, kills = 0, refusal_deaths_of_live = 0;
  size_t stalled_count = 0;
  for (size_t r = 0; r < in.runs && !out.error; ++r) {
    Cluster c(cluster_options(in, r));
    SimRng rng(derive_seed(in.seed + r, 0x7374616c6c));
    std::vector<uint8_t> stalled(in.n, 0), removed(in.n, 0);
    EventTap tap;
    tap.event = [&](uint32_t, uint32_t subject, const gossip::MemberEvent& ev, Time) {
      if (ev.member.state != gossip::State::dead || !live_generation(c, subject, ev)) return;
      removed[subject] = 1;
      if (ev.member.refused) ++refusal_deaths_of_live;
    };
    c.add_observer(&tap);
    if (converge(c, out, seconds(kConvergeS))) {
      c.network().defaults().loss = in.loss.value_or(0);
      stalled_count = std::max<size_t>(1, static_cast<size_t>(std::lround(in.stall_share * double(in.n))));
      stalled_count = std::min(stalled_count, in.n);
      // A random choice of members, each paused on its own phase.
      std::vector<uint32_t> order(in.n);
      for (uint32_t m = 0; m < in.n; ++m) order[m] = m;
      for (size_t i = 0; i + 1 < order.size(); ++i) std::swap(order[i], order[i + rng.below(order.size() - i)]);
      const Time end = c.now() + seconds(length_s);
      schedule_kills(c, in, r, end, kills);
      std::function<void(uint32_t)> stall_once = [&](uint32_t m) {
        c.pause(m, pause);
        ++pauses;
        if (c.now() + every < end) c.at(c.now() + every, [&stall_once, m] { stall_once(m); });
      };
      for (size_t i = 0; i < stalled_count; ++i) {
        const uint32_t m = order[i];
        stalled[m] = 1;
        const Time phase(static_cast<int64_t>(rng.below(static_cast<uint64_t>(every.count()))));
        c.at(c.now() + phase, [&stall_once, m] { stall_once(m); });
      }
      c.run_until(end);
    }
    for (uint32_t m = 0; m < in.n; ++m) {
      if (removed[m]) (stalled[m] ? removals_of_paused : false_removals) += 1;
    }
    finish_run(c, out);
  }
  out.figures.number("stall_share", in.stall_share);
  out.figures.number("stall_pause_s", in.stall_pause_s);
  out.figures.number("stall_every_s", in.stall_every_s);
  out.figures.number("loss", in.loss.value_or(0));
  out.figures.number("measured_s", length_s);
  out.figures.count("stalled_members", stalled_count);
  out.figures.count("pauses", pauses);
  out.figures.count("false_removals", false_removals);
  out.figures.count("removals_of_paused", removals_of_paused);
  out.figures.count("kills", kills);
  out.figures.count("refusal_deaths_of_live", refusal_deaths_of_live);
  return out;
}

}  // namespace shoal::sim
