// Checkpoint admission: pushes only from the member placement sends here, fetches only from members.
#include "ckpt_service/admission.hpp"

#include <doctest/doctest.h>

using namespace shoal::ckpt_service;
using shoal::membership::View;
using shoal::membership::ViewMember;

TEST_CASE("a push is admitted only from the member whose replicas placement sends here; a fetch from any member") {
  // Three hosts, one replica each: every owner's holder is exactly one other member.
  auto view = View::make(3, {ViewMember{"a", "ha", "10.0.0.1:7946", 1, 1, 1}, ViewMember{"b", "hb", "10.0.0.2:7946", 1, 1, 1},
                             ViewMember{"c", "hc", "10.0.0.3:7946", 1, 2, 1}});
  REQUIRE(view);
  const std::optional<View> v = *view;
  int admitted = 0;
  for (const char* sender : {"a", "b", "c"}) {
    for (const char* self : {"a", "b", "c"}) {
      if (std::string_view(sender) == self) {
        CHECK(judge_push(v, self, sender, 1) == Refusal::not_placed);  // never to itself
        continue;
      }
      if (!judge_push(v, self, sender, 1)) ++admitted;
    }
  }
  CHECK(admitted == 3);  // one holder per owner
  CHECK(judge_push(v, "a", "mallory", 1) == Refusal::not_member);
  CHECK(judge_push(std::nullopt, "a", "b", 1) == Refusal::no_view);
  CHECK(judge_push(v, "a", "b/0", 1) == Refusal::not_member);  // sessions never push

  CHECK(judge_fetch(v, "b") == std::nullopt);
  CHECK(judge_fetch(v, "b/3") == std::nullopt);  // a trainer of member b
  CHECK(judge_fetch(v, "mallory/0") == Refusal::not_member);
  CHECK(judge_fetch(std::nullopt, "b") == Refusal::no_view);
}
