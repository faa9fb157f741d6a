// choose_resume and resume_ranks_for as tables: whole and partial steps under any member names, worlds
// that disagree, versions that name no world or a rank outside it, the order of copies, and the split
// of the saved ranks among a new set of hosts.
#include "ckpt_shm/persisted_resume.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace shoal::ckpt;

namespace {

PersistedCandidate file(std::string member, uint32_t rank, uint64_t step, uint32_t world, uint64_t sequence = 1) {
  const std::string path = "/ckpt/" + member + "/job/r" + std::to_string(rank) + ".s" + std::to_string(step);
  return PersistedCandidate{member, PersistedVersion{rank, step, sequence, world, 4096, path}};
}

// Who each rank's copies come from, best first.
std::vector<std::vector<std::string>> members_of(const ResumeChoice& c) {
  std::vector<std::vector<std::string>> out;
  for (const auto& copies : c.ranks) {
    std::vector<std::string> names;
    for (const auto& copy : copies) names.push_back(copy.member);
    out.push_back(std::move(names));
  }
  return out;
}

using Names = std::vector<std::vector<std::string>>;

}  // namespace

TEST_CASE("nothing found, or no step that every rank of its world persisted, resumes nothing") {
  CHECK_FALSE(choose_resume({}).has_value());
  const std::vector<PersistedCandidate> partial{file("a", 0, 20, 2), file("b", 0, 10, 2), file("a", 1, 30, 2)};
  CHECK_FALSE(choose_resume(partial).has_value());
}

TEST_CASE("the newest whole step wins, whoever wrote each rank's file") {
  // Rank 0 wrote under host a, rank 1 under b; rank 1's newest step (30) has no rank 0 beside it.
  const std::vector<PersistedCandidate> found{file("a", 0, 10, 2), file("a", 0, 20, 2), file("b", 1, 10, 2),
                                              file("b", 1, 20, 2), file("b", 1, 30, 2)};
  auto c = choose_resume(found);
  REQUIRE(c.has_value());
  CHECK(c->step == 20);
  CHECK(c->world == 2);
  CHECK(members_of(*c) == Names{{"a"}, {"b"}});
  CHECK(c->ranks[1][0].version.path == "/ckpt/b/job/r1.s20");
}

TEST_CASE("a rank that moved between hosts counts from either directory, its newest commit first") {
  // Rank 1 of step 20 persisted twice: by b (sequence 5) and after a restore by c (sequence 7).
  const std::vector<PersistedCandidate> found{file("a", 0, 20, 2, 3), file("b", 1, 20, 2, 5), file("c", 1, 20, 2, 7)};
  auto c = choose_resume(found);
  REQUIRE(c.has_value());
  CHECK(members_of(*c) == Names{{"a"}, {"c", "b"}});
}

TEST_CASE("copies of equal commits are ordered by member name, whatever order they were found in") {
  std::vector<PersistedCandidate> found{file("z", 0, 5, 1), file("m", 0, 5, 1), file("a", 0, 5, 1)};
  std::mt19937 rng(47);
  for (int i = 0; i < 10; ++i) {
    std::shuffle(found.begin(), found.end(), rng);
    auto c = choose_resume(found);
    REQUIRE(c.has_value());
    CHECK(members_of(*c) == Names{{"a", "m", "z"}});
  }
}

TEST_CASE("files of another world at the same step do not complete it") {
  // Step 30: rank 0 of a world of 2 and rank 1 of a world of 3: neither world is whole, step 20 is.
  const std::vector<PersistedCandidate> found{file("a", 0, 30, 2), file("b", 1, 30, 3), file("a", 0, 20, 2),
                                              file("b", 1, 20, 2)};
  auto c = choose_resume(found);
  REQUIRE(c.has_value());
  CHECK(c->step == 20);
  CHECK(c->world == 2);
}

TEST_CASE("of two whole worlds at one step the larger wins") {
  const std::vector<PersistedCandidate> found{file("a", 0, 40, 1), file("x", 0, 40, 2), file("y", 1, 40, 2)};
  auto c = choose_resume(found);
  REQUIRE(c.has_value());
  CHECK(c->world == 2);
  CHECK(members_of(*c) == Names{{"x"}, {"y"}});
}

TEST_CASE("a version that names no world, or a rank outside its world, never counts") {
  // A forged "rank 5 of world 1, step 10^9" and a world-0 version cannot shadow the real step 10.
  const std::vector<PersistedCandidate> found{file("evil", 5, 1'000'000'000, 1), file("evil", 0, 999, 0),
                                              file("a", 0, 10, 1)};
  auto c = choose_resume(found);
  REQUIRE(c.has_value());
  CHECK(c->step == 10);
  CHECK(c->world == 1);
  // Without the real one nothing is whole.
  CHECK_FALSE(choose_resume(std::vector<PersistedCandidate>{found[0], found[1]}).has_value());
}

namespace {

// A whole choice of `world` ranks, rank r written by writers[r].
ResumeChoice written_by(const std::vector<std::string>& writers) {
  std::vector<PersistedCandidate> found;
  const auto world = static_cast<uint32_t>(writers.size());
  for (uint32_t r = 0; r < world; ++r) found.push_back(file(writers[r], r, 50, world));
  auto c = choose_resume(found);
  REQUIRE(c.has_value());
  return *c;
}

// Members that all joined in the first view (epoch 1).
std::vector<ResumeMember> first_view(const std::vector<std::string>& names) {
  std::vector<ResumeMember> out;
  for (const auto& n : names) out.push_back({n, 1});
  return out;
}

}  // namespace

TEST_CASE("new hosts split the saved ranks by sorted name; a writer back under its name loads its own") {
  struct Row {
    std::vector<std::string> writers;  // who wrote rank 0, 1, ...
    std::vector<std::string> members;  // the new view
    std::string self;
    std::vector<uint32_t> ranks;
  };
  const std::vector<Row> table{
      // Every host new: by sorted name, rank r to members[r % n].
      {{"old1", "old2", "old3"}, {"c", "a", "b"}, "a", {0}},
      {{"old1", "old2", "old3"}, {"c", "a", "b"}, "c", {2}},
      {{"old1", "old2", "old3"}, {"n2", "n1"}, "n1", {0, 2}},
      {{"old1", "old2", "old3"}, {"n2", "n1"}, "n2", {1}},
      {{"old1", "old2"}, {"x", "y", "z"}, "z", {}},
      {{"o", "o", "o", "o"}, {"solo"}, "solo", {0, 1, 2, 3}},
      {{"old1", "old2"}, {"a", "b"}, "stranger", {}},
      {{"old1", "old2"}, {"b", "a", "b"}, "b", {1}},
      // The same hosts again: each loads what it wrote, as at start.
      {{"b", "b", "a", "a"}, {"a", "b"}, "a", {2, 3}},
      {{"b", "b", "a", "a"}, {"a", "b"}, "b", {0, 1}},
      // One writer back, one new host: the new one takes the orphan by its index among the sorted members.
      {{"a", "gone"}, {"a", "new"}, "a", {0}},
      {{"a", "gone"}, {"a", "new"}, "new", {1}},
  };
  for (const auto& row : table) {
    CAPTURE(row.self);
    CHECK(resume_ranks_for(written_by(row.writers), first_view(row.members), row.self) == row.ranks);
  }
  // Together the members hold every rank exactly once.
  const std::vector<std::string> members{"h4", "h1", "h3", "h2"};
  const auto choice = written_by({"h9", "h1", "h8", "h7", "h3", "h6", "h5", "h5", "h2", "h0"});
  std::vector<uint32_t> all;
  for (const auto& m : members) {
    const auto mine = resume_ranks_for(choice, first_view(members), m);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<uint32_t> expected(10);
  for (uint32_t r = 0; r < 10; ++r) expected[r] = r;
  CHECK(all == expected);
}

TEST_CASE("a member that joins a cluster that ran before it loads nothing from disk") {
  const auto choice = written_by({"old1", "old2", "old3"});
  // a and b formed the cluster in epoch 1 and split the ranks between them in their first view.
  const std::vector<ResumeMember> first{{"a", 1}, {"b", 1}};
  CHECK(resume_ranks_for(choice, first, "a") == std::vector<uint32_t>{0, 2});
  CHECK(resume_ranks_for(choice, first, "b") == std::vector<uint32_t>{1});
  // c came in epoch 4: its first view has members that joined before it.
  const std::vector<ResumeMember> members{{"a", 1}, {"b", 1}, {"c", 4}};
  CHECK(resume_ranks_for(choice, members, "c").empty());
  CHECK_FALSE(among_first_members(members, "c"));
  CHECK(among_first_members(members, "a"));
  CHECK(among_first_members(first, "b"));
  CHECK_FALSE(among_first_members(first, "stranger"));
  // Its own files it loaded at start; nothing more at its first view.
  CHECK(resume_ranks_for(written_by({"c", "old2"}), members, "c").empty());
}

TEST_CASE("the whole steps, newest first and bounded, are what a restore can fall back to") {
  // Steps 10, 20 and 30 whole in a world of 2 (rank 1's 30 written twice); 40 lacks rank 1; 20 also whole in a
  // world of 1, which gives way to the larger world.
  const std::vector<PersistedCandidate> found{file("a", 0, 10, 2), file("b", 1, 10, 2), file("a", 0, 20, 2),
                                              file("b", 1, 20, 2), file("s", 0, 20, 1), file("a", 0, 30, 2),
                                              file("b", 1, 30, 2), file("c", 1, 30, 2), file("a", 0, 40, 2)};
  const auto steps_of = [](const std::vector<ResumeChoice>& choices) {
    std::vector<std::pair<uint64_t, uint32_t>> out;
    for (const auto& c : choices) out.emplace_back(c.step, c.world);
    return out;
  };
  using Steps = std::vector<std::pair<uint64_t, uint32_t>>;
  CHECK(steps_of(whole_persisted_steps(found, 10)) == Steps{{30, 2}, {20, 2}, {10, 2}});
  CHECK(steps_of(whole_persisted_steps(found, 2)) == Steps{{30, 2}, {20, 2}});
  CHECK(whole_persisted_steps(found, 0).empty());
  CHECK(whole_persisted_steps(found, 1).front().ranks[1].size() == 2);
  CHECK(choose_resume(found)->step == 30);
}
