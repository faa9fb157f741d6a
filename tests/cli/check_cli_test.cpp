// `shoal check` against real agents on loopback: the JSON document's shape (hosts with their compute figure
// and verdict, links of both rounds with bandwidth and round trip), the table, the time bound, usage errors,
// and an agent without a committed view refusing with a message. --precheck lets the workers start after the
// check of the first view.
#include <doctest/doctest.h>

#include <chrono>
#include <set>

#include "../support/agent_fixture.hpp"
#include "control/client.hpp"
#include "control/replies.hpp"

using shoal::test::AgentCluster;
using shoal::test::CommandResult;
using shoal::test::run_command;
using namespace std::chrono_literals;

namespace {

CommandResult run_shoal(std::vector<std::string> args, std::chrono::milliseconds timeout = 30s) {
  args.insert(args.begin(), SHOAL_BINARY);
  return run_command(args, timeout);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Starts `n` agents with --min-hosts n and waits until the first sees a committed view of all of them.
std::vector<std::string> start_cluster(AgentCluster& c, int n, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> names;
  std::vector<std::string> args = {"--min-hosts", std::to_string(n)};
  args.insert(args.end(), extra.begin(), extra.end());
  for (int i = 0; i < n; ++i) names.push_back("host" + std::to_string(i));
  c.start(names[0], {}, args);
  for (int i = 1; i < n; ++i) c.start(names[i], {c[names[0]].addr}, args);
  const bool formed = AgentCluster::eventually(
      [&] {
        for (const auto& name : names) {
          const auto v = c.request<shoal::control::ViewReply>(name, "view");
          if (!v || v->members.size() != size_t(n)) return false;
        }
        return true;
      },
      30s);
  INFO(c.log_tail(names[1]));
  REQUIRE(formed);
  return names;
}

}  // namespace

TEST_CASE("shoal check --json against four agents: every host and both rounds of links, within the time bound") {
  AgentCluster c;
  const auto names = start_cluster(c, 4);
  const auto start = std::chrono::steady_clock::now();
  const auto json = run_shoal({"check", "--control", c[names[0]].control, "--json", "--bytes", "8M"});
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(json.out << json.err << c.log_tail(names[0]));
  REQUIRE(json.exit_code == 0);
  CHECK(took_s < 10.0);
  MESSAGE("shoal check of 4 agents took " << took_s << " s");
  const auto doc = shoal::control::parse_reply<shoal::control::CheckReply>(json.out);
  REQUIRE_MESSAGE(doc.ok(), json.out);
  CHECK(doc->self == names[0]);
  CHECK(doc->epoch > 0);
  CHECK(doc->factor == 1.5);
  CHECK(doc->bytes == 8u << 20);
  REQUIRE(doc->hosts.size() == 4);
  std::set<std::string> seen;
  for (const auto& h : doc->hosts) {
    seen.insert(h.name);
    CHECK(h.answered);
    REQUIRE_MESSAGE(h.gflops.has_value(), h.name);
    CHECK(*h.gflops > 0);
    CHECK(h.backend == "openblas");
    CHECK(h.links == 2);  // one in each round
  }
  CHECK(seen == std::set<std::string>(names.begin(), names.end()));
  REQUIRE(doc->links.size() == 4);
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& l : doc->links) {
    CHECK((l.round == 1 || l.round == 2));
    REQUIRE_MESSAGE(l.gbps.has_value(), l.a << "-" << l.b << ": " << l.error.value_or(""));
    CHECK(*l.gbps > 0);
    REQUIRE(l.rtt_us.has_value());
    CHECK(*l.rtt_us > 0);
    CHECK(l.bytes > 0);
    CHECK(l.bytes <= doc->bytes);
    CHECK_FALSE(l.error.has_value());
    CHECK(pairs.insert(std::minmax(l.a, l.b)).second);  // no pair measured twice
  }
  CHECK(doc->dropped == 0);
  // The keys scripts rely on, present even where null.
  for (const char* key : {R"("hosts":[{"name":)", R"("flagged":)", R"("links":[{"a":)", R"("b":)", R"("gbps":)",
                          R"("rtt_us":)", R"("round":)", R"("slow":)"}) {
    CHECK_MESSAGE(contains(json.out, key), key);
  }

  const auto table = run_shoal({"check", "--control", c[names[1]].control, "--ms", "100", "--bytes", "4M"});
  INFO(table.out << table.err);
  CHECK(table.exit_code == 0);
  CHECK(contains(table.out, "HOST"));
  CHECK(contains(table.out, "ROUND"));
  CHECK(contains(table.out, "flagged hosts:"));
  for (const auto& n : names) CHECK(contains(table.out, n));
}

TEST_CASE("shoal check: help, usage errors, and an agent with no committed view refuses with a reason") {
  const auto help = run_shoal({"check", "--help"});
  CHECK(help.exit_code == 0);
  for (const char* flag : {"--control", "--name", "--json", "--factor", "--bytes", "--ms", "--pings"}) {
    CHECK_MESSAGE(contains(help.out, flag), flag);
  }
  CHECK(contains(run_shoal({"--help"}).out, "check"));
  CHECK(run_shoal({"check", "--factor", "0.5"}).exit_code == 2);
  CHECK(run_shoal({"check", "--ms", "0"}).exit_code == 2);
  CHECK(run_shoal({"check", "--bytes", "2G"}).exit_code == 2);

  AgentCluster c;
  // A joiner whose seed never answers has no committed view.
  const auto& lone = c.start("lone", {"127.0.0.1:1"});
  const auto r = run_shoal({"check", "--control", lone.control});
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(contains(r.err, "no committed view"), r.err);
  auto raw = shoal::control::control_request(lone.control, "check bytes=0");
  REQUIRE(raw.ok());
  CHECK(contains(*raw, "bytes must lie in"));
  raw = shoal::control::control_request(lone.control, "check colour=blue");
  REQUIRE(raw.ok());
  CHECK(contains(*raw, "unknown key"));
}

TEST_CASE("--precheck: the first view is handed on after the check, whose verdict every agent logs") {
  AgentCluster c;
  const auto names = start_cluster(c, 3, {"--precheck", "--precheck-wait", "20"});
  const bool logged = AgentCluster::eventually(
      [&] {
        return contains(c.log_tail(names[0], 200), "precheck: the precheck is over") &&
               contains(c.log_tail(names[1], 200), "precheck: the precheck by " + names[0] + " is over");
      },
      20s);
  INFO(c.log_tail(names[0], 60) << "\n---\n" << c.log_tail(names[1], 60));
  CHECK(logged);
  CHECK(contains(c.log_tail(names[0], 200), "check: done in"));
  // Every member had committed the view when the check asked it (the coordinator lets them settle first).
  CHECK_FALSE(contains(c.log_tail(names[0], 200), "unreachable"));
  for (const auto& n : names) CHECK_FALSE(contains(c.log_tail(n, 200), "check: refused"));
}
