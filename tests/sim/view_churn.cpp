// The fault schedule of a view-safety run, and the two-member split that shows the quorum policies' trade.
#include "view_churn.hpp"

#include <algorithm>
#include <functional>

#include "addresses.hpp"
#include "cluster.hpp"
#include "rng.hpp"
#include "view_layer.hpp"
#include "view_safety_checker.hpp"

namespace shoal::sim {
namespace {

constexpr Time kPoll{50'000};

bool up(const Cluster& c, uint32_t m) {
  return c.status(m) == MemberStatus::running || c.status(m) == MemberStatus::paused;
}

// Crashes the proposer that is collecting acceptances, once, a moment after its first ACCEPTED arrives:
// in the middle of its accept phase or its commits.
struct ProposerAssassin : ViewObserver {
  Cluster* cluster = nullptr;
  SimRng* rng = nullptr;
  std::function<bool(uint32_t)> may_take_down;
  std::function<void(uint32_t)> take_down;  // crashes now, restarts later
  bool armed = false;
  uint64_t hits = 0;
  void on_accepted(uint32_t proposer, uint32_t, uint64_t, uint64_t epoch, uint64_t, Time now) override {
    if (!armed || epoch <= 1 || !may_take_down(proposer)) return;
    armed = false;
    const uint32_t gen = cluster->generation(proposer);
    // An observer may not change the cluster while it delivers: the crash is scheduled (0-2 ms later).
    cluster->at(now + Time(static_cast<int64_t>(rng->below(2000))), [this, proposer, gen] {
      if (cluster->generation(proposer) == gen && may_take_down(proposer)) {
        take_down(proposer);
        ++hits;
      }
    });
  }
};

class ChurnDriver {
 public:
  ChurnDriver(Cluster& c, ViewSafetyChecker& checker, const ViewChurnParams& p, uint64_t seed, uint32_t min_hosts)
      : c_(c), checker_(checker), p_(p), rng_(derive_seed(seed, 0x636875726e)), min_hosts_(min_hosts) {}

  // Whether taking `x` down now (crash, restart, leave) keeps a majority of every view that may commit
  // running. Faults beyond that make the documented stall (a lost majority waits for an operator), not
  // a safety question. A view already proposed may still commit with members that died meanwhile (an
  // adopted value needs only the majority), so a take-down needs the latest committed view to be whole
  // (all its members running at the generations it holds) and to keep its majority without x, the
  // previous take-down to be a few seconds old (rounds give up after phase_timeout), and one member to
  // spare above --min-hosts.
  bool may_take_down(uint32_t x) const {
    if (x >= pending_restart_.size() || !up(c_, x) || pending_restart_[x] || leaving_[x]) return false;
    if (last_take_down_ && c_.now() - *last_take_down_ < Time(3'000'000)) return false;
    const membership::View& v = checker_.latest();
    for (const auto& vm : v.members()) {
      const auto idx = index_of_name(vm.name);
      if (!idx || !up(c_, *idx) || c_.generation(*idx) != vm.generation || leaving_[*idx]) return false;
    }
    const bool in_view = v.find(member_name(x)) != nullptr;
    if (in_view && (v.size() - 1) * 2 <= v.size()) return false;  // x's loss alone costs the majority
    size_t running = 0;
    for (uint32_t m = 0; m < c_.size(); ++m) running += (up(c_, m) && !leaving_[m] && m != x) ? 1 : 0;
    return running >= size_t(min_hosts_) + 1;
  }

  void schedule(Time from, Time until) {
    pending_restart_.assign(c_.size(), 0);
    leaving_.assign(c_.size(), 0);
    for (Time t = from + gap(); t < until; t += gap()) {
      c_.at(t, [this, until] { act(until); });
    }
  }

  // Ends every fault: heals the network, lifts loss, restarts every crashed member still waiting.
  void stop_faults() {
    c_.network().heal();
    c_.network().defaults().loss = 0;
    for (const auto& [a, b] : cut_links_) c_.network().clear_link(a, b);
    cut_links_.clear();
    for (uint32_t m = 0; m < c_.size(); ++m) {
      if (pending_restart_[m]) restart(m);
    }
  }

  // Crashes `m` now; it comes back with a new generation 0.3-3 s later (by `until` at the latest).
  void crash_for_a_while(uint32_t m, Time until) {
    if (c_.now() >= until) return;  // the faults are over
    last_take_down_ = c_.now();
    say("crash " + member_name(m));
    c_.crash(m);
    pending_restart_[m] = 1;
    c_.at(std::min(c_.now() + span(300, 3000), until), [this, m] { restart(m); });
  }

  uint64_t faults() const { return faults_; }

 private:
  Time gap() { return Time(300'000 + static_cast<int64_t>(rng_.below(1'700'000))); }
  Time span(int64_t lo_ms, int64_t hi_ms) {
    return Time((lo_ms + static_cast<int64_t>(rng_.below(uint64_t(hi_ms - lo_ms + 1)))) * 1000);
  }

  std::vector<uint32_t> running() const {
    std::vector<uint32_t> out;
    for (uint32_t m = 0; m < c_.size(); ++m) {
      if (c_.status(m) == MemberStatus::running && !leaving_[m]) out.push_back(m);
    }
    return out;
  }
  std::optional<uint32_t> pick_victim() {
    std::vector<uint32_t> ok;
    for (uint32_t m : running()) {
      if (may_take_down(m)) ok.push_back(m);
    }
    if (ok.empty()) return std::nullopt;
    return ok[rng_.below(ok.size())];
  }
  // Members up that have not learned any view (restarted or new processes). Enough of them cut off
  // together bootstrap a job of their own at epoch 1 (the keeper cannot tell that a job exists), so
  // while faults run, fewer than --min-hosts may exist at once: the configuration the keeper relies on
  // (see README "Committed views"; ViewChurnParams::allow_fresh_quorum lifts it).
  size_t fresh() const {
    size_t n = 0;
    for (uint32_t m = 0; m < c_.size(); ++m) {
      const ViewLayer* l = up(c_, m) ? ViewKeepers::of(c_, m) : nullptr;
      if (l != nullptr && l->keeper().view().epoch() == 0) ++n;
    }
    return n;
  }
  bool may_add_fresh() const { return p_.allow_fresh_quorum || fresh() + 1 < min_hosts_; }

  void restart(uint32_t m) {
    if (!may_add_fresh()) {  // try again once the fresh ones have learned the view
      c_.at(c_.now() + Time(500'000), [this, m] { restart(m); });
      return;
    }
    pending_restart_[m] = 0;
    if (c_.status(m) == MemberStatus::crashed) {
      c_.restart(m);
      say("back " + member_name(m) + "/" + std::to_string(c_.generation(m)));
    }
  }
  // Splits the running members in two at random, with the two smallest on different sides when asked.
  std::pair<std::vector<uint32_t>, std::vector<uint32_t>> split(bool separate_smallest) {
    std::vector<uint32_t> a, b;
    std::vector<uint32_t> all = running();
    for (size_t i = 0; i < all.size(); ++i) {
      if (separate_smallest && i < 2) {
        (i == 0 ? a : b).push_back(all[i]);
      } else {
        (rng_.chance(0.5) ? a : b).push_back(all[i]);
      }
    }
    return {a, b};
  }

  void say(const std::string& what) const {
    if (p_.trace) p_.trace(format_time(c_.now()) + " " + what);
  }
  static std::string names(const std::vector<uint32_t>& ms) {
    std::string out;
    for (uint32_t m : ms) out += (out.empty() ? "" : ",") + member_name(m);
    return "{" + out + "}";
  }

  void act(Time until) {
    if (!c_.ok()) return;
    ++faults_;
    switch (rng_.below(9)) {
      case 0:
      case 1: {  // crash; back with a new generation a little later
        if (const auto v = pick_victim()) crash_for_a_while(*v, until);
        return;
      }
      case 2: {  // restart at once: a new process under the same name
        if (!may_add_fresh()) return;
        if (const auto v = pick_victim()) {
          last_take_down_ = c_.now();
          c_.restart(*v);
          say("restart " + member_name(*v) + "/" + std::to_string(c_.generation(*v)));
        }
        return;
      }
      case 3: {  // a new host joins
        if (joins_ >= p_.max_joins || !may_add_fresh()) return;
        ++joins_;
        const uint32_t m = c_.add_member();
        pending_restart_.resize(c_.size(), 0);
        leaving_.resize(c_.size(), 0);
        c_.start(m, c_.now());
        say("join " + member_name(m));
        return;
      }
      case 4: {  // graceful leave
        const auto v = pick_victim();
        if (!v) return;
        leaving_[*v] = 1;
        last_take_down_ = c_.now();
        say("leave " + member_name(*v));
        c_.leave(*v);
        return;
      }
      case 5: {  // datagram loss changes
        c_.network().defaults().loss = p_.max_loss * double(rng_.below(1001)) / 1000.0;
        say("loss " + std::to_string(c_.network().defaults().loss));
        return;
      }
      case 6:
      case 7: {  // a symmetric partition, half the time splitting the two smallest (two proposers)
        auto [a, b] = split(rng_.chance(0.5));
        c_.network().partition({a, b});
        say("partition " + names(a) + " | " + names(b));
        c_.at(std::min(c_.now() + span(500, 5000), until), [this] {
          say("heal");
          c_.network().heal();
        });
        return;
      }
      case 8: {  // a one-way partition, or one cut link both ways
        auto [a, b] = split(false);
        if (rng_.chance(0.5) && !a.empty() && !b.empty()) {
          const uint32_t x = a[0], y = b[0];
          LinkParams dead = c_.network().defaults();
          dead.loss = 1;
          c_.network().set_link(x, y, dead);
          c_.network().set_link(y, x, dead);
          cut_links_.push_back({x, y});
          cut_links_.push_back({y, x});
          say("cut " + member_name(x) + " <-> " + member_name(y));
          c_.at(std::min(c_.now() + span(500, 5000), until), [this, x, y] {
            c_.network().clear_link(x, y);
            c_.network().clear_link(y, x);
          });
        } else {
          c_.network().block_one_way(a, b);
          say("one-way " + names(a) + " -/-> " + names(b));
          c_.at(std::min(c_.now() + span(500, 5000), until), [this] {
            say("heal");
            c_.network().heal();
          });
        }
        return;
      }
    }
  }

  Cluster& c_;
  ViewSafetyChecker& checker_;
  const ViewChurnParams& p_;
  SimRng rng_;
  uint32_t min_hosts_;
  std::vector<uint8_t> pending_restart_, leaving_;
  std::vector<std::pair<uint32_t, uint32_t>> cut_links_;
  std::optional<Time> last_take_down_;
  size_t joins_ = 0;
  uint64_t faults_ = 0;
};

// Tells the trace about every commit.
struct CommitTrace : ViewObserver {
  const ViewChurnParams* p = nullptr;
  void on_commit(uint32_t member, uint64_t generation, const membership::View& v, Time now) override {
    p->trace(format_time(now) + " " + member_name(member) + "/" + std::to_string(generation) + " commits " +
             brief(v));
  }
};

ClusterOptions churn_cluster(size_t members, uint64_t seed) {
  ClusterOptions o;
  o.members = members;
  o.seed = seed;
  // Partitions and loss make gossip declare live members dead; they refute with a higher incarnation.
  o.revival = Revival::by_refutation;
  o.leave_linger = Time(500'000);
  return o;
}

}  // namespace

ViewChurnResult run_view_churn(const ViewChurnParams& p, uint64_t seed) {
  SimRng rng(derive_seed(seed, 0x76696577));
  const size_t n = p.min_members + rng.below(p.max_members - p.min_members + 1);
  membership::Config cfg;
  // More than half the starting members: two disjoint first views cannot both form.
  cfg.min_hosts = static_cast<uint32_t>(n / 2 + 1);
  cfg.hold_down = Time(1'000'000);  // short, so that falsely removed members are back within the run
  cfg.policy = p.policy;
  ViewKeepers keepers(cfg);
  keepers.track_accepts(true);
  ViewSafetyChecker checker(p.policy);
  keepers.add_observer(&checker);
  CommitTrace commit_trace;
  commit_trace.p = &p;
  if (p.trace) {
    keepers.add_observer(&commit_trace);
    p.trace("seed " + std::to_string(seed) + ": " + std::to_string(n) + " members, min_hosts " +
            std::to_string(cfg.min_hosts));
  }
  ClusterOptions opts = churn_cluster(n, seed);
  opts.layers = keepers.factory();
  Cluster c(opts);

  ChurnDriver driver(c, checker, p, seed, cfg.min_hosts);
  ProposerAssassin assassin;
  assassin.cluster = &c;
  assassin.rng = &rng;
  assassin.may_take_down = [&driver](uint32_t m) { return driver.may_take_down(m); };
  Time churn_until(0);
  assassin.take_down = [&driver, &churn_until](uint32_t m) { driver.crash_for_a_while(m, churn_until); };
  keepers.add_observer(&assassin);

  c.start_all(Time(0));
  // Half the runs let the first view form in peace; the others start the faults during the bootstrap.
  Time churn_from(0);
  if (rng.chance(0.5)) {
    c.run_until(Time(20'000'000), kPoll, [&] { return checker.commits() > 0 && ViewSafetyChecker::converged(c); });
    churn_from = c.now();
  }
  churn_until = churn_from + p.churn;
  driver.schedule(churn_from, churn_until);
  // Up to two proposers die in the middle of a round.
  for (Time t = churn_from + Time(2'000'000); t < churn_until; t += Time(5'000'000)) {
    c.at(t, [&assassin, &rng] { assassin.armed = rng.chance(0.7); });
  }
  c.at(churn_until, [&] {
    assassin.armed = false;
    driver.stop_faults();
  });
  c.run_until(churn_until);
  c.run_until(churn_until + p.settle_limit, kPoll, [&] { return ViewSafetyChecker::converged(c); });

  ViewChurnResult r;
  // The faults may end with a majority of the newest view dead: the survivors must stall (the issue's
  // rule), and an operator's `shoal view force` at one of them must then bring everyone together.
  if (c.ok() && p.policy == membership::QuorumPolicy::majority && !ViewSafetyChecker::converged(c)) {
    if (const auto at = ViewSafetyChecker::majority_lost_stall(c)) {
      ++r.majority_lost_stalls;
      ViewLayer* layer = ViewKeepers::of(c, *at);
      checker.forced(layer->keeper().view().epoch() + 1);
      layer->request_force();
      c.wake_layer(*at, 0, c.now());
      if (p.trace) p.trace(format_time(c.now()) + " stalled by the majority rule: force at " + member_name(*at));
      const Time forced_at = c.now();
      c.run_until(forced_at + p.settle_limit, kPoll, [&] { return ViewSafetyChecker::converged(c); });
      if (p.trace && layer->last_force() && !layer->last_force()->ok()) {
        p.trace("force refused: " + layer->last_force()->error().message);
      }
    }
  }
  r.harness_ok = c.ok();
  if (c.ok()) checker.check_converged(c);
  r.divergences = checker.divergences();
  r.minority_commits = checker.minority_commits();
  r.unconverged = checker.unconverged();
  r.commits = checker.commits();
  r.faults = driver.faults() + assassin.hits;
  r.proposer_crashes = assassin.hits;
  r.final_epoch = checker.latest().epoch();
  if (!c.ok()) {
    r.finding = *c.violation();
  } else if (!checker.findings().empty()) {
    r.finding = checker.findings().front();
  }
  r.trace_hash = c.trace().value();
  r.virtual_s = double(c.now().count()) / 1e6;
  return r;
}

PairSplitResult run_pair_split(membership::QuorumPolicy policy, uint64_t seed, Time split) {
  membership::Config cfg;
  cfg.min_hosts = 1;  // a survivor alone is a valid job if the policy lets it continue
  cfg.policy = policy;
  cfg.hold_down = Time(1'000'000);
  ViewKeepers keepers(cfg);
  ViewSafetyChecker checker(policy);
  keepers.add_observer(&checker);
  ClusterOptions opts = churn_cluster(2, seed);
  opts.layers = keepers.factory();
  Cluster c(opts);

  PairSplitResult r;
  c.start_all(Time(0));
  r.formed = c.run_until(Time(20'000'000), kPoll, [&] {
    return ViewSafetyChecker::converged(c) && checker.latest().size() == 2;
  });
  const uint64_t commits_before = checker.commits();
  if (r.formed) {
    c.network().partition({{0}, {1}});
    c.run_until(c.now() + split);
    r.either_moved = checker.commits() > commits_before;
    c.network().heal();
    r.rejoined = c.run_until(c.now() + Time(30'000'000), kPoll, [&] {
      return ViewSafetyChecker::converged(c) && checker.latest().size() == 2;
    });
  }
  r.harness_ok = c.ok();
  r.divergences = checker.divergences();
  if (!c.ok()) {
    r.finding = *c.violation();
  } else if (!checker.findings().empty()) {
    r.finding = checker.findings().front();
  }
  r.trace_hash = c.trace().value();
  r.virtual_s = double(c.now().count()) / 1e6;
  return r;
}

}  // namespace shoal::sim
