// Round: the quorum arithmetic of one proposer round, checked vote by vote.
#include <doctest/doctest.h>

#include "keeper_cluster.hpp"
#include "membership/round.hpp"

using namespace shoal::membership;
using namespace shoal::membership::testing;

namespace {

View view_of(uint64_t epoch, std::vector<size_t> idx) {
  std::vector<ViewMember> ms;
  for (size_t i : idx) ms.push_back(ViewMember{name_of(i), "host" + std::to_string(i), addr_of(i), 1, 1, 1});
  return View::make(epoch, ms).value();
}

Vote yes(bool acceptor = true) {
  Vote v;
  v.ok = true;
  v.acceptor = acceptor;
  return v;
}

}  // namespace

TEST_CASE("a majority of the base view is needed, and two of five is not enough") {
  const View base = view_of(1, {0, 1, 2, 3, 4});
  Round r(1, Ballot{1, "h0"}, view_of(2, {0, 1, 2, 3}), base, false);
  r.record_failure("h4");
  r.record("h0", yes());
  r.record("h1", yes());
  CHECK(r.quorum() == Quorum::pending);
  r.record("h2", yes());
  r.record("h3", yes());
  CHECK(r.quorum() == Quorum::reached);
}

TEST_CASE("a round whose majority can no longer answer is impossible at once") {
  const View base = view_of(1, {0, 1, 2, 3, 4});
  Round r(1, Ballot{1, "h0"}, view_of(2, {0, 1}), base, false);
  r.record("h0", yes());
  r.record("h1", yes());
  r.record_failure("h2");
  r.record_failure("h3");
  CHECK(r.quorum() == Quorum::pending);  // h4 may still answer: 3 of 5 possible
  r.record_failure("h4");
  CHECK(r.quorum() == Quorum::impossible);
}

TEST_CASE("votes of members that are behind or not acceptors do not count toward the majority") {
  const View base = view_of(1, {0, 1, 2});
  Round r(1, Ballot{1, "h0"}, view_of(2, {0, 1, 2}), base, false);
  r.record("h0", yes());
  r.record("h1", yes(false));
  CHECK(r.quorum() == Quorum::pending);
  r.record("h2", yes(false));
  CHECK(r.quorum() == Quorum::impossible);
}

TEST_CASE("a fresh value needs every one of its members, a joiner included") {
  const View base = view_of(1, {0, 1, 2});
  Round r(1, Ballot{1, "h0"}, view_of(2, {0, 1, 2, 3}), base, false);
  for (auto n : {"h0", "h1", "h2"}) r.record(n, yes());
  CHECK(r.quorum() == Quorum::pending);
  r.record_failure("h3");
  CHECK(r.quorum() == Quorum::impossible);
}

TEST_CASE("a nack from a higher ballot ends the round") {
  const View base = view_of(1, {0, 1, 2});
  Round r(1, Ballot{1, "h0"}, view_of(2, {0, 1}), base, false);
  r.record("h0", yes());
  Vote nack;
  nack.higher = Ballot{5, "h1"};
  r.record("h1", nack);
  CHECK(r.quorum() == Quorum::impossible);
}

TEST_CASE("an accepted value found in phase 1 is adopted and then needs only the majority") {
  const View base = view_of(1, {0, 1, 2, 3, 4});
  const View theirs = view_of(2, {0, 1, 2, 3});
  Round r(1, Ballot{3, "h0"}, view_of(2, {0, 1, 2}), base, false);
  Vote with_value = yes();
  with_value.accepted_ballot = Ballot{2, "h1"};
  with_value.accepted = theirs;
  r.record("h0", yes());
  r.record("h1", with_value);
  r.record("h2", yes());
  REQUIRE(r.quorum() == Quorum::reached);
  r.begin_accept();
  CHECK(r.inherited());
  CHECK(r.value() == theirs);
  r.record("h0", yes());
  r.record("h1", yes());
  r.record_failure("h3");  // a member of the adopted value that died meanwhile
  CHECK(r.quorum() == Quorum::pending);
  r.record("h2", yes());
  CHECK(r.quorum() == Quorum::reached);
}

TEST_CASE("in all-members mode (bootstrap, force) the base majority is not needed but every member is") {
  const View base = view_of(1, {0, 1, 2});
  Round r(1, Ballot{1, "h0"}, view_of(2, {0}), base, true);
  CHECK(r.targets().size() == 1);
  r.record("h0", yes());
  CHECK(r.quorum() == Quorum::reached);
}
