// The `members` document and its table rendering.
#include "daemon/reports/members_report.hpp"

#include <doctest/doctest.h>

#include "cli/members_table.hpp"
#include "control/replies/stats.hpp"
#include "daemon/reports/stats_report.hpp"
#include "gossip/swim.hpp"

using namespace shoal;

namespace {

gossip::Member member(const std::string& name, gossip::State state, uint64_t incarnation, uint64_t generation) {
  gossip::Member m;
  m.id = {name, generation, "10.0.0." + std::to_string(name.size()) + ":7946"};
  m.state = state;
  m.incarnation = incarnation;
  return m;
}

}  // namespace

TEST_CASE("the members document lists members by name with state, incarnation and generation") {
  wire::RejectCounters core, shell;
  core.add(wire::RejectCause::bad_magic);
  core.add(wire::RejectCause::wrong_cluster);
  shell.add(wire::RejectCause::wrong_cluster);
  shell.add(wire::RejectCause::oversized);
  const std::string json =
      shoal::daemon::members_json("b",
                                  {member("c", gossip::State::dead, 2, 30), member("b", gossip::State::alive, 0, 20),
                                   member("a", gossip::State::suspect, 5, 10), member("d", gossip::State::left, 1, 40)},
                                  core, shell);
  // The text scripts read: members in name order, each member's fields and the causes in this order.
  CHECK(json.starts_with(
      R"({"self":"b","members":[{"name":"a","addr":"10.0.0.1:7946","state":"suspect","incarnation":5,"generation":10},)"
      R"({"name":"b","addr":"10.0.0.1:7946","state":"alive","incarnation":0,"generation":20},)"));
  CHECK(json.ends_with(R"(],"rejected":{"truncated":0,"bad_magic":1,"oversized":1,"malformed":0,"bad_version":0,)"
                       R"("wrong_cluster":2,"bad_auth":0,"no_key":0,"replayed":0,"stale":0,"wrong_destination":0,"overloaded":0}})"));
  auto doc = shoal::control::parse_reply<shoal::control::MembersReply>(json);
  REQUIRE(doc.ok());
  CHECK(doc->self == "b");
  const auto& ms = doc->members;
  REQUIRE(ms.size() == 4);
  CHECK(ms[0] == shoal::control::MemberRow{"a", "10.0.0.1:7946", "suspect", 5, 10});
  CHECK(ms[1].name == "b");
  CHECK(ms[2].state == "dead");
  CHECK(ms[3].state == "left");
  CHECK(doc->rejected.by_cause.size() == wire::kRejectCauses);
  CHECK(doc->rejected.find("bad_magic") == 1u);
  CHECK(doc->rejected.find("wrong_cluster") == 2u);  // the core's and the shell's, summed
  CHECK(doc->rejected.find("oversized") == 1u);
  CHECK(doc->rejected.find("truncated") == 0u);
  CHECK_FALSE(doc->rejected.find("no_such_cause").has_value());
}

TEST_CASE("the table marks self, aligns columns and summarises refused inputs") {
  wire::RejectCounters none, some;
  some.add(wire::RejectCause::truncated);
  auto doc = shoal::control::parse_reply<shoal::control::MembersReply>(shoal::daemon::members_json(
      "node1", {member("node1", gossip::State::alive, 0, 7), member("n2", gossip::State::dead, 3, 9)}, none, some));
  REQUIRE(doc.ok());
  const std::string table = shoal::cli::render_members_table(*doc);
  CHECK(table.find("NAME") == 0);
  CHECK(table.find("node1 (self)") != std::string::npos);
  CHECK(table.find("n2 ") != std::string::npos);
  CHECK(table.find("dead") != std::string::npos);
  CHECK(table.find("rejected inputs: truncated 1") != std::string::npos);
  // Every row starts its ADDR column at the same offset.
  const auto header_addr = table.find("ADDR");
  const auto at = table.find("10.0.0.5:7946");
  REQUIRE(at != std::string::npos);
  CHECK(at - (table.rfind('\n', at) + 1) == header_addr);
}

TEST_CASE("a reply that is not a member list is refused with the reason") {
  const auto error = shoal::control::parse_reply<shoal::control::MembersReply>(R"({"error":"x","requests":[]})");
  REQUIRE_FALSE(error.ok());
  CHECK(error.error().message == "x");
  const auto other = shoal::control::parse_reply<shoal::control::MembersReply>(R"({"epoch":3,"members":[]})");
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message == R"(the reply is not a member list (it has no "self"))");
}

TEST_CASE("the stats document carries the core's counters, its health and the summed rejects") {
  gossip::Config cfg;
  cfg.cluster_id = "c";
  gossip::Swim swim(cfg, gossip::Identity{"me", 7, "127.0.0.1:1"}, gossip::MemberMeta{}, 1);
  gossip::Effects fx;
  swim.start({}, gossip::Time{0}, fx);
  const std::vector<std::byte> noise(20, std::byte{0x41});
  swim.on_packet("127.0.0.1:2", noise, gossip::Time{1000}, fx);
  wire::RejectCounters shell;
  shell.add(wire::RejectCause::bad_magic);
  const std::string json = shoal::daemon::stats_json(swim, shell);
  CHECK(json.starts_with(R"({"self":"me","generation":7,"live_members":1,"local_health":0,"gossip":{"packets_in":1,)"));
  CHECK(json.find(R"("push_pull_full_exchanges":0,"stalls_detected":0,"hints":0,"hints_ignored":0,"refusals_seen":0,)"
                  R"("refusal_confirmations":0,"refusals_void":0,"deaths_on_refusal":0},"rejected":{"truncated":0,)"
                  R"("bad_magic":2,)") != std::string::npos);
  auto doc = shoal::control::parse_reply<shoal::control::StatsReply>(json);
  REQUIRE(doc.ok());
  CHECK(doc->self == "me");
  CHECK(doc->generation == 7u);
  CHECK(doc->live_members == 1u);
  CHECK(doc->local_health == 0);
  CHECK(doc->gossip.packets_in == 1u);
  CHECK(doc->gossip.bytes_in == 20u);
  CHECK(doc->rejected.find("bad_magic") == 2u);
}
