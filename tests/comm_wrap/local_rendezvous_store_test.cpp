// LocalRendezvousStore: values cross threads, a superseded epoch fails every call at once, and a
// timeout names the keys that never came.
#include "comm_wrap/stores/local_rendezvous_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "shoal/errors.hpp"

using namespace std::chrono_literals;
using shoal::comm::Bytes;
using shoal::comm::LocalRendezvousStore;

namespace {

Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("a value set on one thread reaches a rank already waiting for it on another") {
  LocalRendezvousStore store(7);
  auto waiter = std::async(std::launch::async, [&] { return store.get("uid", 5s); });
  std::this_thread::sleep_for(50ms);
  store.set("uid", bytes("abc"));
  CHECK(waiter.get() == bytes("abc"));
}

TEST_CASE("multi_get returns the values in the order of the keys asked") {
  LocalRendezvousStore store(1);
  store.set("b", bytes("2"));
  store.set("a", bytes("1"));
  store.set("c", bytes("3"));
  CHECK(store.multi_get({"c", "a", "b"}, 1s) == std::vector<Bytes>{bytes("3"), bytes("1"), bytes("2")});
}

TEST_CASE("a later set of a key replaces its value") {
  LocalRendezvousStore store(1);
  store.set("k", bytes("old"));
  store.set("k", bytes("new"));
  CHECK(store.get("k", 1s) == bytes("new"));
}

TEST_CASE("a wait on a superseded epoch throws ViewChanged at once, and so does every later call") {
  LocalRendezvousStore store(4);
  const auto started = std::chrono::steady_clock::now();
  auto waiter = std::async(std::launch::async, [&] { store.wait({"never"}, 20s); });
  std::this_thread::sleep_for(50ms);
  const auto superseded_at = std::chrono::steady_clock::now();
  store.supersede("epoch 5 committed");
  CHECK_THROWS_AS(waiter.get(), shoal::ViewChanged);
  CHECK(ms_since(superseded_at) < 500.0);
  CHECK(ms_since(started) < 2000.0);

  CHECK(store.superseded());
  CHECK_THROWS_AS(store.wait({"x"}, 10s), shoal::ViewChanged);
  CHECK_THROWS_AS(store.get("x", 10s), shoal::ViewChanged);
  CHECK_THROWS_AS(store.set("x", bytes("1")), shoal::ViewChanged);
}

TEST_CASE("the ViewChanged of a superseded store carries its epoch and the reason") {
  LocalRendezvousStore store(9);
  store.supersede("host h3 failed");
  store.supersede("a second reason is ignored");
  try {
    store.wait({"k"}, 1s);
    FAIL("wait returned on a superseded store");
  } catch (const shoal::ViewChanged& e) {
    CHECK(e.epoch() == 9);
    CHECK(std::string(e.what()).find("host h3 failed") != std::string::npos);
    CHECK(std::string(e.what()).find("second") == std::string::npos);
  }
}

TEST_CASE("a timeout names exactly the missing keys") {
  LocalRendezvousStore store(3);
  store.set("rank/0", bytes("x"));
  try {
    store.wait({"rank/0", "rank/1", "rank/2"}, 100ms);
    FAIL("wait returned with keys missing");
  } catch (const shoal::Timeout& e) {
    const std::string what = e.what();
    CHECK(what.find("'rank/1'") != std::string::npos);
    CHECK(what.find("'rank/2'") != std::string::npos);
    CHECK(what.find("'rank/0'") == std::string::npos);
    CHECK(what.find("2 of 3") != std::string::npos);
  }
}

TEST_CASE("a timeout with many missing keys names the first ones and counts the rest") {
  LocalRendezvousStore store(3);
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back("k" + std::to_string(i));
  try {
    store.wait(keys, 20ms);
    FAIL("wait returned with keys missing");
  } catch (const shoal::Timeout& e) {
    const std::string what = e.what();
    CHECK(what.find("'k0'") != std::string::npos);
    CHECK(what.find("'k39'") == std::string::npos);
    CHECK(what.find("24 more") != std::string::npos);
  }
}

TEST_CASE("a wait for keys already present returns at once") {
  LocalRendezvousStore store(2);
  store.set("a", bytes("1"));
  const auto started = std::chrono::steady_clock::now();
  store.wait({"a"}, 10s);
  CHECK(ms_since(started) < 500.0);
}
