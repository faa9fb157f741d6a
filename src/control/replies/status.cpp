// JSON conversions of the `status` reply; the members that may be absent are written by hand.
#include "control/replies/status.hpp"

#include <cmath>

namespace shoal::control {

SHOAL_JSON_MEMBERS(StatusView, epoch, members, status, reason, in_view, live_of_view)
SHOAL_JSON_MEMBERS(MembersByState, alive, suspect, dead, left)
SHOAL_JSON_MEMBERS(StatusCheckpoints, job, local_versions, local_bytes, replicas, replica_bytes, pushed, push_failed,
                   received, receive_refused, lag)
SHOAL_JSON_MEMBERS(StatusHealth, reported, epoch, step, stragglers, eviction, evictions)
SHOAL_JSON_MEMBERS(StatusReply, self, addr, generation, cluster, keyed, slots, view, members_by_state, view_changes,
                   checkpoints, health, trainers)
SHOAL_JSON_MEMBERS(NamesCut, epoch, joined, left)
SHOAL_JSON_MEMBERS(ViewHistoryReply, self, kept, recorded, view_changes, cut)

void to_json(Json& j, const ViewChangeRow& r) {
  j = Json::object();
  j["epoch"] = r.epoch;
  j["members"] = r.members;
  j["joined"] = r.joined;
  j["left"] = r.left;
  j["trigger"] = r.trigger;
  if (r.seconds) j["seconds"] = *r.seconds;
  j["committed_unix"] = r.committed_unix;
}

void from_json(const Json& j, ViewChangeRow& r) {
  require_object(j, "a view change");
  r = ViewChangeRow{};
  read_member(j, "epoch", r.epoch);
  read_member(j, "members", r.members);
  read_member(j, "joined", r.joined);
  read_member(j, "left", r.left);
  read_member(j, "trigger", r.trigger);
  read_member(j, "seconds", r.seconds);
  read_member(j, "committed_unix", r.committed_unix);
}

void to_json(Json& j, const LagRow& r) {
  j = Json::object();
  j["rank"] = r.rank;
  j["committed_step"] = r.committed_step;
  if (r.replicated_step) j["replicated_step"] = *r.replicated_step;
  if (r.steps_behind) j["steps_behind"] = *r.steps_behind;
}

void from_json(const Json& j, LagRow& r) {
  require_object(j, "a rank's replication lag");
  r = LagRow{};
  read_member(j, "rank", r.rank);
  read_member(j, "committed_step", r.committed_step);
  read_member(j, "replicated_step", r.replicated_step);
  read_member(j, "steps_behind", r.steps_behind);
}

void to_json(Json& j, const StatusTrainer& r) {
  j = Json::object();
  j["rank"] = r.rank;
  j["age_s"] = r.age_s;
  j["reports"] = r.reports;
  Json figures = Json::object();
  for (const auto& [key, value] : r.figures) {
    // Counts as integers (scripts compare them as such); 2^53 bounds what a double holds exactly.
    if (value >= 0 && value <= 9007199254740992.0 && std::floor(value) == value) {
      figures[key] = static_cast<uint64_t>(value);
    } else {
      figures[key] = value;
    }
  }
  j["figures"] = std::move(figures);
}

void from_json(const Json& j, StatusTrainer& r) {
  require_object(j, "a trainer's report");
  r = StatusTrainer{};
  read_member(j, "rank", r.rank);
  read_member(j, "age_s", r.age_s);
  read_member(j, "reports", r.reports);
  if (const auto it = j.find("figures"); it != j.end() && !it->is_null()) {
    require_object(*it, "a trainer's figures");
    for (const auto& [key, value] : it->items()) {
      if (!value.is_number()) throw Json::type_error::create(302, "the figure " + key + " is not a number", &value);
      r.figures.emplace_back(key, value.get<double>());
    }
  }
}

}  // namespace shoal::control
