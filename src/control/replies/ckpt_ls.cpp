// JSON conversions of the `ckpt-ls` reply; held segments and the persist section are written by hand
// (members present or absent with the segment's state, or flat in the document).
#include "control/replies/ckpt_ls.hpp"

namespace shoal::control {

SHOAL_JSON_MEMBERS(CkptCounters, pushed, push_skipped, push_failed, push_superseded, received, receive_refused,
                   fetches_served, evicted)
SHOAL_JSON_MEMBERS(RefusedSegments, symlink, not_regular, foreign_owner, loose_mode)
SHOAL_JSON_MEMBERS(PersistedRow, rank, step, world, bytes, path)
SHOAL_JSON_MEMBERS(PersistCountersRow, persisted, bytes, refused, cancelled, failed, removed, busy)
SHOAL_JSON_MEMBERS(RefusedPersisted, unsafe_directory, symlink, not_regular, foreign_owner, loose_mode, oversized,
                   invalid)

void to_json(Json& j, const HeldRow& r) {
  j = Json::object();
  j["segment"] = r.segment;
  j["kind"] = r.kind;
  j["segment_bytes"] = r.segment_bytes;
  if (r.from) j["from"] = *r.from;
  j["sealed"] = r.sealed();
  if (r.version) {
    j["job"] = r.version->job;
    j["rank"] = r.version->rank;
    j["step"] = r.version->step;
    j["world"] = r.version->world;
    j["bytes"] = r.version->bytes;
    j["buffers"] = r.version->buffers;
  }
  if (r.verified) j["verified"] = *r.verified;
  if (r.problem) j["problem"] = *r.problem;
}

void from_json(const Json& j, HeldRow& r) {
  require_object(j, "a held segment");
  r = HeldRow{};
  read_member(j, "segment", r.segment);
  read_member(j, "kind", r.kind);
  read_member(j, "segment_bytes", r.segment_bytes);
  read_member(j, "from", r.from);
  if (j.value("sealed", false)) {
    HeldVersion& v = r.version.emplace();
    read_member(j, "job", v.job);
    read_member(j, "rank", v.rank);
    read_member(j, "step", v.step);
    read_member(j, "world", v.world);
    read_member(j, "bytes", v.bytes);
    read_member(j, "buffers", v.buffers);
  }
  read_member(j, "verified", r.verified);
  read_member(j, "problem", r.problem);
}

void to_json(Json& j, const CkptLsReply& r) {
  j = Json::object();
  j["job"] = r.job;
  j["store"] = r.store;
  j["replicas"] = r.replicas;
  j["budget_bytes"] = r.budget_bytes;
  j["held"] = r.held;
  j["counters"] = r.counters;
  j["refused_segments"] = r.refused_segments;
  if (r.persist) {
    j["persist_dir"] = r.persist->dir;
    j["persisted"] = r.persist->files;
    j["persist_counters"] = r.persist->counters;
    j["persist_refused"] = r.persist->refused;
  }
}

void from_json(const Json& j, CkptLsReply& r) {
  require_object(j, "a checkpoint listing");
  r = CkptLsReply{};
  read_member(j, "job", r.job);
  read_member(j, "store", r.store);
  read_member(j, "replicas", r.replicas);
  read_member(j, "budget_bytes", r.budget_bytes);
  read_member(j, "held", r.held);
  read_member(j, "counters", r.counters);
  read_member(j, "refused_segments", r.refused_segments);
  if (j.contains("persist_dir")) {
    PersistSection& p = r.persist.emplace();
    read_member(j, "persist_dir", p.dir);
    read_member(j, "persisted", p.files);
    read_member(j, "persist_counters", p.counters);
    read_member(j, "persist_refused", p.refused);
  }
}

}  // namespace shoal::control
