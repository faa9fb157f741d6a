// The rendezvous store served by real agents over their TCP port: values cross from one rank to
// another, a wait on a superseded epoch fails at once with ViewChanged, a wait that cannot complete
// times out naming the missing keys, a caller can abandon a wait, and garbage is refused without harm.
#include "daemon/rendezvous_service.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <future>
#include <thread>

#include "daemon/agent.hpp"
#include "running_agent.hpp"
#include "session/rendezvous_client.hpp"
#include "shoal/errors.hpp"

using namespace std::chrono_literals;
using shoal::daemon::Agent;
using shoal::daemon::AgentConfig;
using shoal::session::NetworkRendezvousStore;

using shoal::test::eventually;
using shoal::test::RunningAgent;

TEST_CASE("a value set by one rank reaches another rank that was already waiting for it") {
  RunningAgent a("a", {});
  REQUIRE(eventually([&] { return a.epoch >= 1; }, 5s));
  const uint64_t e = a.epoch;
  auto waiter = std::async(std::launch::async, [&] {
    auto s = a.store(e);
    return s->multi_get({"rank/0", "rank/1"}, 5s);
  });
  std::this_thread::sleep_for(100ms);
  auto setter = a.store(e);
  setter->set("rank/1", {'b'});
  setter->set("rank/0", {'a', 'a'});
  const auto values = waiter.get();
  REQUIRE(values.size() == 2);
  CHECK(values[0] == shoal::comm::Bytes{'a', 'a'});
  CHECK(values[1] == shoal::comm::Bytes{'b'});
}

TEST_CASE("a wait on an epoch that a newer committed view supersedes fails at once with ViewChanged") {
  RunningAgent a("a", {});
  REQUIRE(eventually([&] { return a.epoch >= 1; }, 5s));
  const uint64_t e = a.epoch;
  auto waiter = std::async(std::launch::async, [&] {
    auto s = a.store(e);
    const auto started = std::chrono::steady_clock::now();
    try {
      s->wait({"never-set"}, 30s);
    } catch (const shoal::ViewChanged&) {
      return std::chrono::steady_clock::now() - started;
    }
    return std::chrono::steady_clock::duration::max();
  });
  std::this_thread::sleep_for(200ms);
  RunningAgent b("b", {{"127.0.0.1", a.agent->port()}});  // the join commits epoch e+1
  REQUIRE(waiter.wait_for(10s) == std::future_status::ready);
  CHECK(waiter.get() < 10s);
  // The store may refuse the old epoch as soon as a newer one is under way; the commit itself (what
  // this test's observer sees) can come a moment later on a loaded machine.
  CHECK(eventually([&] { return a.epoch > e; }, 5s));
  // Later calls on the old epoch fail at once too.
  auto late = a.store(e);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(late->get("x", 5s), shoal::ViewChanged);
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
}

TEST_CASE("a wait that cannot complete times out with a message naming the missing keys") {
  RunningAgent a("a", {});
  REQUIRE(eventually([&] { return a.epoch >= 1; }, 5s));
  auto s = a.store(a.epoch);
  s->set("gloo/rank_0", {'x'});
  try {
    s->wait({"gloo/rank_0", "gloo/rank_2"}, 300ms);
    FAIL("the wait returned");
  } catch (const shoal::Timeout& t) {
    const std::string what = t.what();
    CHECK(what.find("gloo/rank_2") != std::string::npos);
    CHECK(what.find("gloo/rank_0") == std::string::npos);
  }
}

TEST_CASE("a caller abandons a wait as soon as its superseded check turns true") {
  RunningAgent a("a", {});
  REQUIRE(eventually([&] { return a.epoch >= 1; }, 5s));
  std::atomic<bool> gone{false};
  auto waiter = std::async(std::launch::async, [&] {
    auto s = a.store(a.epoch, [&] { return gone.load(); });
    CHECK_THROWS_AS(s->wait({"k"}, 30s), shoal::ViewChanged);
  });
  std::this_thread::sleep_for(200ms);
  const auto t0 = std::chrono::steady_clock::now();
  gone = true;
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
  waiter.get();
}

TEST_CASE("a store host that is not reachable is retried until the caller gives up") {
  NetworkRendezvousStore::Options o;
  o.store_addr = "127.0.0.1:1";  // nothing listens on port 1
  o.epoch = 1;
  o.set_timeout = 300ms;
  NetworkRendezvousStore s(o);
  CHECK_THROWS_AS(s.set("k", {'v'}), shoal::Timeout);
}

TEST_CASE("garbage on the rendezvous channel is refused and the store keeps serving") {
  RunningAgent a("a", {});
  REQUIRE(eventually([&] { return a.epoch >= 1; }, 5s));
  namespace asio = boost::asio;
  asio::io_context io;
  for (int i = 0; i < 3; ++i) {
    asio::ip::tcp::socket sock(io);
    sock.connect({asio::ip::make_address("127.0.0.1"), a.agent->port()});
    const char junk[] = "\x00\x00\x00\x05\x02garbage that is not a hello";
    boost::system::error_code ec;
    asio::write(sock, asio::buffer(junk, sizeof(junk)), ec);
  }
  auto s = a.store(a.epoch);
  s->set("after", {'1'});
  CHECK(s->get("after", 2s) == shoal::comm::Bytes{'1'});
}
