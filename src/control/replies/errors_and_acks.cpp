// JSON conversions of the error document and the acknowledgements.
#include "control/replies/errors_and_acks.hpp"

namespace shoal::control {

SHOAL_JSON_MEMBERS(ErrorReply, error, requests)
SHOAL_JSON_MEMBERS(CommittedReply, ok)

void to_json(Json& j, const CkptSafeReply& r) {
  j = Json::object();
  j["rank"] = r.rank;
  j["committed"] = r.committed;
  if (r.replicated) j["replicated"] = *r.replicated;
  j["holders"] = r.holders;
  j["persisting"] = r.persisting;
  if (r.persisted) j["persisted"] = *r.persisted;
}

void from_json(const Json& j, CkptSafeReply& r) {
  require_object(j, "a checkpoint's safety");
  r = CkptSafeReply{};
  read_member(j, "rank", r.rank);
  read_member(j, "committed", r.committed);
  read_member(j, "replicated", r.replicated);
  read_member(j, "holders", r.holders);
  read_member(j, "persisting", r.persisting);
  read_member(j, "persisted", r.persisted);
}

void to_json(Json& j, const ForceReply& r) {
  j = Json::object();
  j["forced"] = r.forced;
  if (r.error) j["error"] = *r.error;
  j["epoch"] = r.epoch;
}

void from_json(const Json& j, ForceReply& r) {
  require_object(j, "the outcome of view-force");
  r = ForceReply{};
  read_member(j, "forced", r.forced);
  read_member(j, "error", r.error);
  read_member(j, "epoch", r.epoch);
}

void to_json(Json& j, const DrainReply& r) {
  j = Json::object();
  j["draining"] = r.draining;
  if (r.error) j["error"] = *r.error;
  j["within_s"] = r.within_s;
  j["epoch"] = r.epoch;
}

void from_json(const Json& j, DrainReply& r) {
  require_object(j, "the outcome of drain");
  r = DrainReply{};
  read_member(j, "draining", r.draining);
  read_member(j, "error", r.error);
  read_member(j, "within_s", r.within_s);
  read_member(j, "epoch", r.epoch);
}

void to_json(Json& j, const ExcludeReply& r) {
  j = Json::object();
  j["committed"] = r.committed;
  j["pending"] = r.pending;
  if (r.error) j["error"] = *r.error;
  j["epoch"] = r.epoch;
  j["members"] = r.members;
  j["excluded"] = r.excluded;
}

void from_json(const Json& j, ExcludeReply& r) {
  require_object(j, "the outcome of view-exclude or view-readmit");
  r = ExcludeReply{};
  read_member(j, "committed", r.committed);
  read_member(j, "pending", r.pending);
  read_member(j, "error", r.error);
  read_member(j, "epoch", r.epoch);
  read_member(j, "members", r.members);
  read_member(j, "excluded", r.excluded);
}

}  // namespace shoal::control
