// JSON conversions of `session-info` and `session-wait`.
#include "control/replies/session.hpp"

namespace shoal::control {

SHOAL_JSON_MEMBERS(SessionInfoReply, name, generation, addr, cluster, slots, job, store, key_file, store_by_lineage,
                   ckpt_replicas)

void to_json(Json& j, const SessionWaitReply& r) {
  j = Json::object();
  j["seq"] = r.seq;
  j["broken_epoch"] = r.broken_epoch;
  j["broken_why"] = r.broken_why;
  j["failures"] = r.failures;
  j["view"] = r.view ? Json(*r.view) : Json(nullptr);
  j["cleared_epoch"] = r.cleared_epoch;
  j["drain"] = r.drain;
}

void from_json(const Json& j, SessionWaitReply& r) {
  require_object(j, "a session-wait answer");
  r = SessionWaitReply{};
  read_member(j, "seq", r.seq);
  read_member(j, "broken_epoch", r.broken_epoch);
  read_member(j, "broken_why", r.broken_why);
  read_member(j, "failures", r.failures);
  read_member(j, "view", r.view);
  read_member(j, "cleared_epoch", r.cleared_epoch);
  read_member(j, "drain", r.drain);
}

}  // namespace shoal::control
