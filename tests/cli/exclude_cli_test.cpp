// `shoal view exclude` / `readmit` against four real agents on loopback: asked of one member, the exclusion
// is committed by the cluster (every agent's view carries it), the excluded agent stays alive out of views
// and says why, the refusals name their reason (a majority, an unknown name, a readmit of a member not
// excluded, a usage error), and a readmit brings the host back in one view.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "../support/agent_fixture.hpp"
#include "control/replies.hpp"

using shoal::test::AgentCluster;
using shoal::test::CommandResult;
using shoal::test::run_command;
using namespace std::chrono_literals;

namespace {

CommandResult run_shoal(std::vector<std::string> args, std::chrono::milliseconds timeout = 40s) {
  args.insert(args.begin(), SHOAL_BINARY);
  return run_command(args, timeout);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every agent's committed view has `size` members and the excluded list `excluded`.
bool all_hold(AgentCluster& c, const std::vector<std::string>& names, size_t size,
              const std::vector<std::string>& excluded) {
  for (const auto& n : names) {
    const auto v = c.request<shoal::control::ViewReply>(n, "view");
    if (!v || v->members.size() != size || v->excluded != excluded) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("shoal view exclude and readmit: committed by the cluster, refused with reasons, undone in one view") {
  AgentCluster c;
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) names.push_back("host" + std::to_string(i));
  const std::vector<std::string> args = {"--min-hosts", "3"};
  c.start(names[0], {}, args);
  for (int i = 1; i < 4; ++i) c.start(names[i], {c[names[0]].addr}, args);
  REQUIRE(AgentCluster::eventually([&] { return all_hold(c, names, 4, {}); }, 30s));

  // Asked of host1 (not the designated proposer, host0).
  const auto excluded = run_shoal({"view", "exclude", "host3", "--control", c[names[1]].control});
  INFO(excluded.out << excluded.err << c.log_tail(names[1]));
  REQUIRE(excluded.exit_code == 0);
  CHECK(contains(excluded.out, "excluded: host3 (committed epoch "));
  CHECK(AgentCluster::eventually([&] { return all_hold(c, names, 3, {"host3"}); }, 10s));
  CHECK(contains(c.log_tail(names[0], 80), "excludes host3 (the operator's `shoal view exclude`)"));

  // The excluded agent stays alive out of views and says why; a readiness probe says it is not ready.
  std::this_thread::sleep_for(3s);
  CHECK(all_hold(c, names, 3, {"host3"}));
  const auto out_of_view = c.request<shoal::control::ViewReply>(names[3], "view");
  REQUIRE(out_of_view.has_value());
  CHECK_FALSE(out_of_view->in_view);
  CHECK(contains(out_of_view->reason, "excluded by the operator"));
  CHECK(run_shoal({"view", "--ready", "--control", c[names[3]].control}).exit_code == 3);
  const auto table = run_shoal({"view", "--control", c[names[0]].control});
  CHECK(contains(table.out, "excluded by the operator (`shoal view readmit NAME` lets one back): host3"));

  struct Refusal {
    std::vector<std::string> args;
    int exit_code;
    const char* says;
  };
  const Refusal refusals[] = {
      {{"view", "exclude", "host0", "host1"}, 1, "not a majority"},
      {{"view", "exclude", "nobody"}, 1, "'nobody' is neither a member nor a host"},
      {{"view", "readmit", "host2"}, 1, "'host2' is not excluded (excluded: host3)"},
      {{"view", "exclude"}, 2, "NAME is required"},
  };
  for (const auto& r : refusals) {
    auto words = r.args;
    words.insert(words.end(), {"--control", c[names[2]].control});
    const auto got = run_shoal(words);
    INFO(r.says << ": " << got.out << got.err);
    CHECK(got.exit_code == r.exit_code);
    CHECK(contains(got.err, r.says));
  }
  // Asked of the excluded agent itself: it is in no view to propose from.
  const auto from_outside = run_shoal({"view", "readmit", "host3", "--control", c[names[3]].control});
  CHECK(from_outside.exit_code == 1);
  CHECK(contains(from_outside.err, "not in the committed view"));
  CHECK(all_hold(c, names, 3, {"host3"}));

  const auto before = c.request<shoal::control::ViewReply>(names[0], "view");
  REQUIRE(before.has_value());
  const auto readmitted = run_shoal({"view", "readmit", "host3", "--control", c[names[2]].control});
  INFO(readmitted.out << readmitted.err << c.log_tail(names[2]));
  REQUIRE(readmitted.exit_code == 0);
  CHECK(contains(readmitted.out, "readmitted: host3"));
  REQUIRE(AgentCluster::eventually([&] { return all_hold(c, names, 4, {}); }, 10s));
  const auto after = c.request<shoal::control::ViewReply>(names[0], "view");
  REQUIRE(after.has_value());
  CHECK(after->epoch == before->epoch + 1);  // the readmit and the join are one view
}
