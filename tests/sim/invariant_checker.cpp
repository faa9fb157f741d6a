// The invariant rules and the reporting of the first violation.
#include "invariant_checker.hpp"

#include <cstdio>

#include "addresses.hpp"

namespace shoal::sim {
namespace {

bool is_down(gossip::State s) { return s == gossip::State::dead || s == gossip::State::left; }

}  // namespace

std::optional<std::string> broken_rule(const SeenRecord& before, const gossip::Member& after, Revival revival) {
  const uint64_t gen = after.id.generation;
  if (before.generation == 0) return std::nullopt;
  if (gen < before.generation) {
    return "generation went backwards from " + std::to_string(before.generation) + " to " + std::to_string(gen);
  }
  if (gen == before.generation && after.incarnation < before.incarnation) {
    return "incarnation of generation " + std::to_string(gen) + " went backwards from " +
           std::to_string(before.incarnation) + " to " + std::to_string(after.incarnation);
  }
  const bool refuted =
      revival == Revival::by_refutation && gen == before.dead_generation && after.incarnation > before.dead_incarnation;
  if (gen <= before.dead_generation && !is_down(after.state) && !refuted) {
    return "resurrection: generation " + std::to_string(gen) + " was shown dead or left and is now shown " +
           gossip::to_string(after.state);
  }
  return std::nullopt;
}

SeenRecord advance(const SeenRecord& before, const gossip::Member& after) {
  SeenRecord r;
  r.generation = static_cast<uint32_t>(after.id.generation);
  r.incarnation = after.incarnation;
  r.state = after.state;
  r.dead_generation = before.dead_generation;
  r.dead_incarnation = before.dead_incarnation;
  if (is_down(after.state) &&
      (r.generation > r.dead_generation || (r.generation == r.dead_generation && r.incarnation > r.dead_incarnation))) {
    r.dead_generation = r.generation;
    r.dead_incarnation = r.incarnation;
  }
  // Leaving ends a generation for good: no refutation brings it back.
  if (after.state == gossip::State::left && r.generation == r.dead_generation) r.dead_incarnation = UINT64_MAX;
  return r;
}

bool InvariantChecker::observe(uint32_t observer, uint32_t subject, const gossip::Member& m, gossip::Time now,
                               const char* source) {
  if (violation_) return false;
  const SeenRecord* before = ledger_.get(observer, subject);
  if (before == nullptr) return true;  // an observer outside the tracked sample
  ++checked_;
  if (m.id.generation > UINT32_MAX) {
    fail("observer " + member_name(observer) + " shows " + m.id.name + " with generation " +
             std::to_string(m.id.generation) + ", beyond what the simulator assigns",
         now);
    return false;
  }
  if (auto rule = broken_rule(*before, m, revival_)) {
    fail("observer " + member_name(observer) + " (" + source + ") about " + m.id.name + ": " + *rule, now);
    return false;
  }
  ledger_.put(observer, subject, advance(*before, m));
  return true;
}

bool InvariantChecker::check_bound(std::string_view what, size_t size, size_t bound, gossip::Time now) {
  if (violation_) return false;
  if (size <= bound) return true;
  fail(std::string(what) + " holds " + std::to_string(size) + ", above its bound of " + std::to_string(bound), now);
  return false;
}

void InvariantChecker::fail(std::string message, gossip::Time now) {
  if (violation_) return;
  violation_ = "invariant violated at t=" + format_time(now) + ": " + message;
}

std::string format_time(gossip::Time t) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld.%06llds", static_cast<long long>(t.count() / 1000000),
                static_cast<long long>(t.count() % 1000000));
  return buf;
}

}  // namespace shoal::sim
