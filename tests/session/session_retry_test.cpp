// SessionCore's rebuild decisions with real parts: three sessions in this process, fed views and
// failure verdicts by the test (as their agents would), building real Gloo communicators over loopback
// through the rendezvous store of a real agent. A collective that fails while every member lives is
// rebuilt for the same view at once (attempt 1); a member's failure that no view confirms is waited out
// for the grace, then the same view is rebuilt too; a failure that a new view confirms within the grace
// is rebuilt for that view, as before attempts existed.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "fed_session.hpp"
#include "running_agent.hpp"
#include "session/session_core.hpp"
#include "shoal/errors.hpp"

using namespace std::chrono_literals;
using shoal::Communicator;
using shoal::test::FedSession;
using shoal::test::make_view;
using shoal::test::RunningAgent;

namespace {

// communicator() on every session at once (each on its own thread); the communicators in session order.
std::vector<std::shared_ptr<Communicator>> build_all(std::vector<std::unique_ptr<FedSession>>& sessions) {
  std::vector<std::future<std::shared_ptr<Communicator>>> f;
  for (auto& s : sessions) f.push_back(std::async(std::launch::async, [&s] { return s->communicator(); }));
  std::vector<std::shared_ptr<Communicator>> out;
  for (auto& x : f) out.push_back(x.get());
  return out;
}

// What ElasticLoop does after a failure: a collective on the old communicator (it throws: a peer's abort
// closed its connections, or its own abort), then communicator(), on every session at once.
std::vector<std::shared_ptr<Communicator>> step_then_rebuild(std::vector<std::unique_ptr<FedSession>>& sessions,
                                                             std::vector<std::shared_ptr<Communicator>>& old) {
  std::vector<std::future<std::shared_ptr<Communicator>>> f;
  for (size_t i = 0; i < sessions.size(); ++i) {
    f.push_back(std::async(std::launch::async, [&s = sessions[i], c = old[i]] {
      int64_t v = 1;
      CHECK_THROWS_AS(c->allreduce(&v, 1, shoal::DataType::i64, shoal::ReduceOp::sum), shoal::ViewChanged);
      return s->communicator();
    }));
  }
  std::vector<std::shared_ptr<Communicator>> out;
  for (auto& x : f) out.push_back(x.get());
  return out;
}

// An allreduce of rank+1 on every communicator: each must see 1+2+...+n.
void check_allreduce(std::vector<std::shared_ptr<Communicator>>& comms) {
  std::vector<std::future<int64_t>> f;
  for (auto& c : comms) {
    f.push_back(std::async(std::launch::async, [&c] {
      int64_t v = c->rank() + 1;
      c->allreduce(&v, 1, shoal::DataType::i64, shoal::ReduceOp::sum);
      return v;
    }));
  }
  const int64_t n = static_cast<int64_t>(comms.size());
  for (auto& x : f) CHECK(x.get() == n * (n + 1) / 2);
}

struct Three {
  RunningAgent agent{"a", {}};
  uint64_t epoch = 0;
  std::vector<std::unique_ptr<FedSession>> sessions;
  std::vector<std::shared_ptr<Communicator>> comms;

  Three() {
    REQUIRE(shoal::test::eventually([&] { return agent.epoch >= 1; }, 5s));
    epoch = agent.epoch;
    const auto view = make_view(epoch, agent, 3);
    for (int i = 0; i < 3; ++i) {
      sessions.push_back(std::make_unique<FedSession>(agent, "n" + std::to_string(i)));
      sessions.back()->feed(view);
    }
    comms = build_all(sessions);
    check_allreduce(comms);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("a communicator that fails while every member lives is rebuilt for the same view at once") {
  Three t;
  t.comms[1]->abort("a reset connection");  // rank 1's own failure; its peers' next collective fails too
  const auto started = std::chrono::steady_clock::now();
  auto rebuilt = step_then_rebuild(t.sessions, t.comms);
  CHECK(seconds_since(started) < 4.0);  // no grace: nobody reported a member failed
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    CHECK(rebuilt[i] != t.comms[i]);
    CHECK(rebuilt[i]->epoch() == t.epoch);
    CHECK(t.sessions[i]->ranks().attempt == 1);
    CHECK(rebuilt[i]->world_size() == 3);
  }
  check_allreduce(rebuilt);
  // And again: attempt 2, under keys of its own.
  rebuilt[0]->abort("another reset");
  auto again = step_then_rebuild(t.sessions, rebuilt);
  for (auto& s : t.sessions) CHECK(s->ranks().attempt == 2);
  check_allreduce(again);
}

TEST_CASE("a member's failure that no view confirms is waited out for the grace, then the same view is rebuilt") {
  Three t;
  for (auto& s : t.sessions) s->fail("n2");  // gossip's verdict under loss; n2 refutes, the keeper removes nobody
  for (auto& c : t.comms) CHECK(c->aborted());
  const auto started = std::chrono::steady_clock::now();
  auto rebuilt = build_all(t.sessions);
  const double waited = seconds_since(started);
  CHECK(waited >= 4.5);  // the grace (5 s) for a view that would remove n2
  CHECK(waited < 15.0);
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    CHECK(rebuilt[i]->epoch() == t.epoch);
    CHECK(t.sessions[i]->ranks().attempt == 1);
  }
  check_allreduce(rebuilt);
}

namespace {
// n2 is reported failed, then answers again 300 ms later: through gossip's alive event (an embedded
// session) or through its agent's feed (a connected session).
void refuted_then_rebuilt(bool from_feed) {
  Three t;
  for (auto& s : t.sessions) s->fail("n2");  // gossip's verdict; n2 refutes before any view removes it
  for (auto& c : t.comms) CHECK(c->aborted());
  const auto started = std::chrono::steady_clock::now();
  auto refuted = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(300ms);
    for (auto& s : t.sessions) {  // n2 answers again, same generation
      if (from_feed) {
        s->taken_back(t.epoch);
      } else {
        s->back("n2");
      }
    }
  });
  auto rebuilt = build_all(t.sessions);
  refuted.get();
  CHECK(seconds_since(started) < 4.0);  // the refutation, not the 5 s grace, ended the wait
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    CHECK(rebuilt[i]->epoch() == t.epoch);
    CHECK(t.sessions[i]->ranks().attempt == 1);
  }
  check_allreduce(rebuilt);
}
}  // namespace

TEST_CASE("a member's failure that it refutes ends the grace at once: the same view is rebuilt") {
  SUBCASE("gossip says the member is alive again") { refuted_then_rebuilt(false); }
  SUBCASE("the agent's feed says every failure was taken back") { refuted_then_rebuilt(true); }
}

TEST_CASE("a member's failure that a new view confirms within the grace is rebuilt for that view") {
  Three t;
  t.sessions[2].reset();  // n2's trainer is gone; its communicator closes with it
  for (int i = 0; i < 2; ++i) t.sessions[i]->fail("n2");
  const auto started = std::chrono::steady_clock::now();
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(500ms);  // the keeper's removal
    const auto view = make_view(t.epoch + 1, t.agent, 2);
    for (int i = 0; i < 2; ++i) t.sessions[i]->feed(view);
  });
  t.sessions.pop_back();
  auto rebuilt = build_all(t.sessions);
  later.get();
  CHECK(seconds_since(started) < 4.5);  // the new view, not the grace, ended the wait
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    CHECK(rebuilt[i]->epoch() == t.epoch + 1);
    CHECK(rebuilt[i]->world_size() == 2);
    CHECK(t.sessions[i]->ranks().attempt == 0);
  }
  check_allreduce(rebuilt);
}
