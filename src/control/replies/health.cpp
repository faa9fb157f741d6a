// JSON conversions of the `health` reply; "age_s" is written only when a report came.
#include "control/replies/health.hpp"

namespace shoal::control {

SHOAL_JSON_MEMBERS(HealthHostRow, name, compute_ms, wait_ms, samples, straggler)
SHOAL_JSON_MEMBERS(HealthDropped, records, figures, forged)
SHOAL_JSON_MEMBERS(HealthRule, factor, min_excess_ms, clear_factor, window_steps, min_samples, raise_after, clear_after,
                   exchange_every)

void to_json(Json& j, const HealthReply& r) {
  j = Json::object();
  j["self"] = r.self;
  j["reported"] = r.reported;
  j["epoch"] = r.epoch;
  j["step"] = r.step;
  j["evaluations"] = r.evaluations;
  if (r.age_s) j["age_s"] = *r.age_s;
  j["hosts"] = r.hosts;
  j["stragglers"] = r.stragglers;
  j["changes"] = r.changes;
  j["dropped"] = r.dropped;
  j["authenticated"] = r.authenticated;
  j["eviction"] = r.eviction;
  j["rule"] = r.rule;
}

void from_json(const Json& j, HealthReply& r) {
  require_object(j, "a health reply");
  r = HealthReply{};
  read_member(j, "self", r.self);
  read_member(j, "reported", r.reported);
  read_member(j, "epoch", r.epoch);
  read_member(j, "step", r.step);
  read_member(j, "evaluations", r.evaluations);
  read_member(j, "age_s", r.age_s);
  read_member(j, "hosts", r.hosts);
  read_member(j, "stragglers", r.stragglers);
  read_member(j, "changes", r.changes);
  read_member(j, "dropped", r.dropped);
  read_member(j, "authenticated", r.authenticated);
  read_member(j, "eviction", r.eviction);
  read_member(j, "rule", r.rule);
}

}  // namespace shoal::control
