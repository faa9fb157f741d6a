// The `members` document and its table rendering.
#include "daemon/reports/members_report.hpp"

#include <doctest/doctest.h>

#include "cli/members_table.hpp"
#include "control/json_reader.hpp"
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
  auto doc = shoal::control::parse_json(json);
  REQUIRE(doc.ok());
  CHECK(doc->find("self")->as_string() == "b");
  const auto& ms = doc->find("members")->items();
  REQUIRE(ms.size() == 4);
  CHECK(ms[0].find("name")->as_string() == "a");
  CHECK(ms[0].find("state")->as_string() == "suspect");
  CHECK(ms[0].find("incarnation")->as_uint64() == 5u);
  CHECK(ms[0].find("generation")->as_uint64() == 10u);
  CHECK(ms[0].find("addr")->as_string() == "10.0.0.1:7946");
  CHECK(ms[2].find("state")->as_string() == "dead");
  CHECK(ms[3].find("state")->as_string() == "left");
  const auto* r = doc->find("rejected");
  REQUIRE(r != nullptr);
  CHECK(r->members().size() == wire::kRejectCauses);
  CHECK(r->find("bad_magic")->as_uint64() == 1u);
  CHECK(r->find("wrong_cluster")->as_uint64() == 2u);  // the core's and the shell's, summed
  CHECK(r->find("oversized")->as_uint64() == 1u);
  CHECK(r->find("truncated")->as_uint64() == 0u);
}

TEST_CASE("the table marks self, aligns columns and summarises refused inputs") {
  wire::RejectCounters none, some;
  some.add(wire::RejectCause::truncated);
  auto doc = shoal::control::parse_json(shoal::daemon::members_json(
      "node1", {member("node1", gossip::State::alive, 0, 7), member("n2", gossip::State::dead, 3, 9)}, none, some));
  REQUIRE(doc.ok());
  auto table = shoal::cli::render_members_table(*doc);
  REQUIRE(table.ok());
  CHECK(table->find("NAME") == 0);
  CHECK(table->find("node1 (self)") != std::string::npos);
  CHECK(table->find("n2 ") != std::string::npos);
  CHECK(table->find("dead") != std::string::npos);
  CHECK(table->find("rejected inputs: truncated 1") != std::string::npos);
  // Every row starts its ADDR column at the same offset.
  const auto header_addr = table->find("ADDR");
  const auto at = table->find("10.0.0.5:7946");
  REQUIRE(at != std::string::npos);
  CHECK(at - (table->rfind('\n', at) + 1) == header_addr);
}

TEST_CASE("a reply that is not a member list is not rendered") {
  auto doc = shoal::control::parse_json(R"({"error":"x"})");
  REQUIRE(doc.ok());
  CHECK_FALSE(shoal::cli::render_members_table(*doc).ok());
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
  auto doc = shoal::control::parse_json(shoal::daemon::stats_json(swim, shell));
  REQUIRE(doc.ok());
  CHECK(doc->find("self")->as_string() == "me");
  CHECK(doc->find("live_members")->as_uint64() == 1u);
  CHECK(doc->find("local_health")->as_uint64() == 0u);
  const auto* g = doc->find("gossip");
  REQUIRE(g != nullptr);
  CHECK(g->find("packets_in")->as_uint64() == 1u);
  CHECK(g->find("push_pulls_started") != nullptr);
  CHECK(doc->find("rejected")->find("bad_magic")->as_uint64() == 2u);
}
