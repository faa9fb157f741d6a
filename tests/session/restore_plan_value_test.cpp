// The per-host restore plan value as it crosses the epoch's store: each rank finds its own part; "none"
// and refusals reach every rank alike; garbage, a value without the rank's part, too many holders, a
// holder outside the view or a saved rank outside its world are refused with a clear error.
#include "session/restore_plan_value.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ckpt.pb.h"
#include "shoal/errors.hpp"

using namespace shoal;
using namespace shoal::ckpt;
using shoal::session::decode_host_plan;
using shoal::session::encode_host_plan;

namespace {

const std::vector<ExpectedHolder> kView = {
    {"a", "10.0.0.1:7946"}, {"a", "10.0.0.1:7946"}, {"b", "10.0.0.2:7946"}, {"b", "10.0.0.2:7946"}};

RestorePlan four_ranks() {
  RestorePlan plan;
  plan.kind = RestorePlan::Kind::plans;
  for (uint32_t r = 0; r < 4; ++r) {
    const PlanHolder own = r < 2 ? PlanHolder{"a", "10.0.0.1:7946", 1000} : PlanHolder{"b", "10.0.0.2:7946", 1000};
    plan.ranks.push_back({7, 4, r, {own}});
  }
  return plan;
}

comm::Bytes raw(const wire::HostRestorePlan& v) {
  const std::string s = v.SerializeAsString();
  return comm::Bytes(s.begin(), s.end());
}

std::string error_of(const comm::Bytes& value, uint32_t rank, uint32_t writer) {
  try {
    (void)decode_host_plan(value, rank, writer, kView);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("each rank of a host finds its own part in its host's value") {
  const auto plan = four_ranks();
  const std::vector<uint32_t> host_b = {2, 3};
  const auto value = encode_host_plan(plan, host_b);
  for (const uint32_t r : host_b) {
    CAPTURE(r);
    const auto part = decode_host_plan(value, r, 2, kView);
    REQUIRE(part);
    CHECK(*part == plan.ranks[r]);
  }
  CHECK(error_of(value, 0, 2).find("has no part for rank 0") != std::string::npos);
}

TEST_CASE("no step, and a refusal, reach every rank alike") {
  RestorePlan none;
  CHECK_FALSE(decode_host_plan(encode_host_plan(none, std::vector<uint32_t>{0, 1}), 1, 0, kView));
  RestorePlan refused;
  refused.kind = RestorePlan::Kind::refused;
  refused.error = "rank 3 asked for saved rank 9, which did not exist at step 7 (world 4)";
  const auto value = encode_host_plan(refused, std::vector<uint32_t>{2, 3});
  CHECK(error_of(value, 2, 2) == "restore refused: " + refused.error);
  CHECK(error_of(value, 3, 2) == "restore refused: " + refused.error);
}

TEST_CASE("values a key holder could write instead are refused, each with its reason") {
  struct Row {
    const char* what;
    comm::Bytes value;
    const char* error_has;
  };
  wire::HostRestorePlan uneven;  // a rank without a plan
  uneven.add_ranks(0);
  wire::HostRestorePlan foreign;  // a holder outside the view
  foreign.add_ranks(0);
  auto* p = foreign.add_plans();
  p->set_step(7);
  p->set_world(4);
  auto* h = p->add_holders();
  h->set_holder("a");
  h->set_addr("10.6.6.6:7946");
  wire::HostRestorePlan crowded = foreign;  // more holders than the view has ranks
  crowded.mutable_plans(0)->clear_holders();
  for (int i = 0; i < 5; ++i) {
    auto* e = crowded.mutable_plans(0)->add_holders();
    e->set_holder("a");
    e->set_addr("10.0.0.1:7946");
  }
  wire::HostRestorePlan outside = foreign;  // a saved rank outside the step's world
  outside.mutable_plans(0)->mutable_holders(0)->set_addr("10.0.0.1:7946");
  outside.mutable_plans(0)->set_source(4);
  const std::vector<Row> rows = {
      {"garbage", comm::Bytes{'\xff', '\xff', '\xff'}, "is malformed"},
      {"truncated",
       [] {
         auto v = encode_host_plan(four_ranks(), std::vector<uint32_t>{0, 1});
         v.resize(v.size() / 2);
         return v;
       }(),
       "is malformed"},
      {"ranks without plans", raw(uneven), "is malformed"},
      {"a holder outside the view", raw(foreign), "names a at 10.6.6.6:7946 for rank 0, which is not a member"},
      {"more holders than ranks", raw(crowded), "names 5 holders for rank 0, more than the view's 4 ranks"},
      {"a saved rank outside its world", raw(outside), "gives rank 0 saved rank 4 of a world of 4"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    CHECK(error_of(row.value, 0, 0).find(row.error_has) != std::string::npos);
  }
}
