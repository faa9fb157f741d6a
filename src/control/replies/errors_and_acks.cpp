// JSON conversions of the error document and the acknowledgements.
#include "control/replies/errors_and_acks.hpp"

namespace shoal::control {

SHOAL_JSON_MEMBERS(ErrorReply, error, requests)
SHOAL_JSON_MEMBERS(CommittedReply, ok)

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

}  // namespace shoal::control
