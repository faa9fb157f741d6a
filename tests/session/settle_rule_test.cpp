// SettleRule::decide over the table that the Python test reads too (settle_table.txt): every branch of the
// rule after a first build, a join, a loss and a rebuild of the same view; and the facts it refuses.
#include "shoal/settle_rule.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "shoal/errors.hpp"

using shoal::SettleDecision;
using shoal::SettleFacts;
using shoal::SettleRule;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

// "step=7" -> 7 for key "step"; nullopt when the word is not that key.
std::optional<uint64_t> value_of(const std::string& word, const std::string& key) {
  if (word.rfind(key + "=", 0) != 0) return std::nullopt;
  return std::stoull(word.substr(key.size() + 1));
}

SettleFacts facts_of(const std::string& text) {
  SettleFacts f;
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (w == "holds") f.holds_state = true;
    else if (w == "lost") f.kept_peers = false;
    else if (w == "restore") f.can_restore = true;
    else if (w == "after_loss") f.restore_after_loss = true;
    else if (auto v = value_of(w, "step")) f.next_step = *v;
    else if (auto v = value_of(w, "digest")) f.digest = *v;
    else if (w != "fresh") FAIL("unknown fact word: " << w);
  }
  return f;
}

SettleDecision decision_of(const std::string& text) {
  SettleDecision d;
  d.hand_out = false;
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (w == "restore") d.restore = true;
    else if (w == "anyone") d.anyone_holds_state = true;
    else if (w == "lost") d.lost_peers = true;
    else if (w == "hand_out") d.hand_out = true;
    else if (auto v = value_of(w, "next")) d.next_step = *v;
    else if (auto v = value_of(w, "source")) d.source_rank = static_cast<int>(*v);
    else FAIL("unknown decision word: " << w);
  }
  return d;
}

}  // namespace

TEST_CASE("the settle rule: every row of the table shared with Python") {
  std::ifstream in(SHOAL_SOURCE_DIR "/tests/session/settle_table.txt");
  REQUIRE_MESSAGE(in, "cannot read tests/session/settle_table.txt");
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto fields = split(line, '|');
    REQUIRE_MESSAGE(fields.size() == 3, "a row needs three fields: " << line);
    CAPTURE(fields[0]);
    std::vector<SettleFacts> ranks;
    for (const auto& r : split(fields[1], ';')) ranks.push_back(facts_of(r));
    const SettleDecision want = decision_of(fields[2]);
    const SettleDecision got = SettleRule::decide(ranks);
    CHECK(got.restore == want.restore);
    CHECK(got.anyone_holds_state == want.anyone_holds_state);
    CHECK(got.lost_peers == want.lost_peers);
    CHECK(got.next_step == want.next_step);
    CHECK(got.source_rank == want.source_rank);
    CHECK(got.hand_out == want.hand_out);
    ++rows;
  }
  CHECK(rows >= 15);
}

TEST_CASE("the settle rule refuses facts it cannot pack, naming them") {
  CHECK_THROWS_WITH_AS(SettleRule::decide({}), doctest::Contains("no rank"), shoal::Error);
  SettleFacts far;
  far.holds_state = true;
  far.next_step = uint64_t{1} << 42;
  const std::vector<SettleFacts> one{far};
  CHECK_THROWS_WITH_AS(SettleRule::decide(one), doctest::Contains("step counter 4398046511104"), shoal::Error);
  far.holds_state = false;  // a step nobody holds is not read
  const std::vector<SettleFacts> idle{far};
  CHECK_FALSE(SettleRule::decide(idle).anyone_holds_state);
}
