// JSON conversions of the `check` reply; a figure not measured is written as null.
#include "control/replies/check.hpp"

namespace shoal::control {
namespace {

template <class T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

}  // namespace

void to_json(Json& j, const CheckHostRow& r) {
  j = Json::object();
  j["name"] = r.name;
  j["addr"] = r.addr;
  j["flagged"] = r.flagged;
  j["reasons"] = r.reasons;
  j["answered"] = r.answered;
  j["gflops"] = or_null(r.gflops);
  j["compute_ratio"] = or_null(r.compute_ratio);
  j["gbps"] = or_null(r.gbps);
  j["links"] = r.links;
  j["slow_links"] = r.slow_links;
  j["matrix_n"] = r.matrix_n;
  j["backend"] = r.backend;
  j["error"] = or_null(r.error);
}

void from_json(const Json& j, CheckHostRow& r) {
  require_object(j, "a host of a check");
  r = CheckHostRow{};
  read_member(j, "name", r.name);
  read_member(j, "addr", r.addr);
  read_member(j, "flagged", r.flagged);
  read_member(j, "reasons", r.reasons);
  read_member(j, "answered", r.answered);
  read_member(j, "gflops", r.gflops);
  read_member(j, "compute_ratio", r.compute_ratio);
  read_member(j, "gbps", r.gbps);
  read_member(j, "links", r.links);
  read_member(j, "slow_links", r.slow_links);
  read_member(j, "matrix_n", r.matrix_n);
  read_member(j, "backend", r.backend);
  read_member(j, "error", r.error);
}

void to_json(Json& j, const CheckLinkRow& r) {
  j = Json::object();
  j["a"] = r.a;
  j["b"] = r.b;
  j["round"] = r.round;
  j["gbps"] = or_null(r.gbps);
  j["rtt_us"] = or_null(r.rtt_us);
  j["rtt_min_us"] = or_null(r.rtt_min_us);
  j["bytes"] = r.bytes;
  j["elapsed_ms"] = r.elapsed_ms;
  j["slow"] = r.slow;
  j["error"] = or_null(r.error);
}

void from_json(const Json& j, CheckLinkRow& r) {
  require_object(j, "a link of a check");
  r = CheckLinkRow{};
  read_member(j, "a", r.a);
  read_member(j, "b", r.b);
  read_member(j, "round", r.round);
  read_member(j, "gbps", r.gbps);
  read_member(j, "rtt_us", r.rtt_us);
  read_member(j, "rtt_min_us", r.rtt_min_us);
  read_member(j, "bytes", r.bytes);
  read_member(j, "elapsed_ms", r.elapsed_ms);
  read_member(j, "slow", r.slow);
  read_member(j, "error", r.error);
}

void to_json(Json& j, const CheckReply& r) {
  j = Json::object();
  j["self"] = r.self;
  j["epoch"] = r.epoch;
  j["factor"] = r.factor;
  j["bytes"] = r.bytes;
  j["max_ms"] = r.max_ms;
  j["elapsed_ms"] = r.elapsed_ms;
  j["median_gflops"] = or_null(r.median_gflops);
  j["median_gbps"] = or_null(r.median_gbps);
  j["hosts"] = r.hosts;
  j["links"] = r.links;
  j["flagged"] = r.flagged;
  j["slow_links"] = r.slow_links;
  j["dropped"] = r.dropped;
}

void from_json(const Json& j, CheckReply& r) {
  require_object(j, "a check reply");
  r = CheckReply{};
  read_member(j, "self", r.self);
  read_member(j, "epoch", r.epoch);
  read_member(j, "factor", r.factor);
  read_member(j, "bytes", r.bytes);
  read_member(j, "max_ms", r.max_ms);
  read_member(j, "elapsed_ms", r.elapsed_ms);
  read_member(j, "median_gflops", r.median_gflops);
  read_member(j, "median_gbps", r.median_gbps);
  read_member(j, "hosts", r.hosts);
  read_member(j, "links", r.links);
  read_member(j, "flagged", r.flagged);
  read_member(j, "slow_links", r.slow_links);
  read_member(j, "dropped", r.dropped);
}

}  // namespace shoal::control
