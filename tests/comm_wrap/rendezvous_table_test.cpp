// RendezvousTable: the epoch rule, parked waits, timeouts that name missing keys, and limits.
#include "comm_wrap/stores/rendezvous_table.hpp"

#include <doctest/doctest.h>

using shoal::comm::RendezvousTable;
using shoal::wire::RendezvousRequest;
using shoal::wire::RendezvousResponse;
using namespace std::chrono_literals;

namespace {

RendezvousRequest set_req(uint64_t epoch, const std::string& key, const std::string& value) {
  RendezvousRequest r;
  r.set_epoch(epoch);
  r.set_op(RendezvousRequest::SET);
  r.add_keys(key);
  r.set_value(value);
  return r;
}

RendezvousRequest get_req(uint64_t epoch, std::vector<std::string> keys, uint32_t timeout_ms = 1000) {
  RendezvousRequest r;
  r.set_epoch(epoch);
  r.set_op(RendezvousRequest::GET);
  for (auto& k : keys) r.add_keys(k);
  r.set_timeout_ms(timeout_ms);
  return r;
}

}  // namespace

TEST_CASE("a get of keys already set is answered at once with the values in request order") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  t.advance(3, out);
  REQUIRE(t.handle(1, set_req(3, "b", "B"), 0us, out)->status() == RendezvousResponse::OK);
  REQUIRE(t.handle(2, set_req(3, "a", "A"), 0us, out)->status() == RendezvousResponse::OK);
  auto r = t.handle(3, get_req(3, {"a", "b"}), 0us, out);
  REQUIRE(r);
  CHECK(r->status() == RendezvousResponse::OK);
  REQUIRE(r->values_size() == 2);
  CHECK(r->values(0) == "A");
  CHECK(r->values(1) == "B");
  CHECK(out.empty());
}

TEST_CASE("a get waits until the last of its keys is set, then the set answers it") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  CHECK_FALSE(t.handle(7, get_req(1, {"x", "y"}), 0us, out));
  CHECK(t.waiting() == 1);
  t.handle(8, set_req(1, "x", "1"), 10us, out);
  CHECK(out.empty());
  t.handle(9, set_req(1, "y", "2"), 20us, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].waiter == 7);
  CHECK(out[0].response.status() == RendezvousResponse::OK);
  CHECK(out[0].response.values(1) == "2");
  CHECK(t.waiting() == 0);
}

TEST_CASE("a request for a superseded epoch is answered VIEW_CHANGED at once") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  t.advance(5, out);
  auto r = t.handle(1, get_req(4, {"k"}), 0us, out);
  REQUIRE(r);
  CHECK(r->status() == RendezvousResponse::VIEW_CHANGED);
  CHECK(r->current_epoch() == 5);
  CHECK(t.handle(2, set_req(4, "k", "v"), 0us, out)->status() == RendezvousResponse::VIEW_CHANGED);
}

TEST_CASE("waits of an epoch are answered VIEW_CHANGED when a newer epoch commits, newer waits stay") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  t.advance(2, out);
  CHECK_FALSE(t.handle(1, get_req(2, {"k"}), 0us, out));
  CHECK_FALSE(t.handle(2, get_req(3, {"k"}), 0us, out));  // a future epoch is served
  t.advance(3, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].waiter == 1);
  CHECK(out[0].response.status() == RendezvousResponse::VIEW_CHANGED);
  CHECK(t.waiting() == 1);
  CHECK(t.epochs_held() == 1);
}

TEST_CASE("a wait past its deadline is answered TIMEOUT naming only the missing keys") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  t.handle(1, set_req(1, "rank/0", "addr0"), 0us, out);
  CHECK_FALSE(t.handle(2, get_req(1, {"rank/0", "rank/1", "rank/2"}, 500), 0us, out));
  REQUIRE(t.next_deadline() == std::optional<RendezvousTable::Time>(500ms));
  t.expire(499ms, out);
  CHECK(out.empty());
  t.expire(500ms, out);
  REQUIRE(out.size() == 1);
  const auto& r = out[0].response;
  CHECK(r.status() == RendezvousResponse::TIMEOUT);
  REQUIRE(r.missing_size() == 2);
  CHECK(r.missing(0) == "rank/1");
  CHECK(r.missing(1) == "rank/2");
  CHECK(t.counters().timeouts == 1);
}

TEST_CASE("a cancelled wait is forgotten and never answered") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  CHECK_FALSE(t.handle(1, get_req(1, {"k"}), 0us, out));
  t.cancel(1);
  t.handle(2, set_req(1, "k", "v"), 0us, out);
  CHECK(out.empty());
  CHECK(t.waiting() == 0);
}

TEST_CASE("limits refuse oversized values, too many keys, far-future epochs and empty requests") {
  RendezvousTable::Limits limits;
  limits.max_value_bytes = 8;
  limits.max_keys_per_epoch = 2;
  limits.max_future_epochs = 2;
  RendezvousTable t(limits);
  std::vector<RendezvousTable::Reply> out;
  CHECK(t.handle(1, set_req(1, "a", std::string(9, 'x')), 0us, out)->status() == RendezvousResponse::REFUSED);
  CHECK(t.handle(2, set_req(1, "a", "1"), 0us, out)->status() == RendezvousResponse::OK);
  CHECK(t.handle(3, set_req(1, "b", "1"), 0us, out)->status() == RendezvousResponse::OK);
  CHECK(t.handle(4, set_req(1, "a", "2"), 0us, out)->status() == RendezvousResponse::OK);  // overwrite
  CHECK(t.handle(5, set_req(1, "c", "1"), 0us, out)->status() == RendezvousResponse::REFUSED);
  CHECK(t.handle(6, set_req(3, "a", "1"), 0us, out)->status() == RendezvousResponse::REFUSED);
  CHECK(t.handle(7, get_req(1, {}), 0us, out)->status() == RendezvousResponse::REFUSED);
  RendezvousRequest bad;
  bad.set_epoch(1);
  bad.add_keys(std::string("a"));  // (the const char* overload trips a GCC 12 -Wrestrict false positive)
  CHECK(t.handle(8, bad, 0us, out)->status() == RendezvousResponse::REFUSED);  // no operation
  CHECK(t.counters().refused == 5);
}

namespace {

RendezvousRequest op_req(uint64_t epoch, RendezvousRequest::Op op, std::vector<std::string> keys, int64_t delta = 0) {
  RendezvousRequest r;
  r.set_epoch(epoch);
  r.set_op(op);
  for (auto& k : keys) r.add_keys(k);
  r.set_delta(delta);
  return r;
}

RendezvousRequest poll_req(uint64_t epoch, const std::string& key, int64_t seen, uint32_t timeout_ms) {
  auto r = op_req(epoch, RendezvousRequest::ADD, {key});
  r.set_wait_for_change(true);
  r.set_seen(seen);
  r.set_timeout_ms(timeout_ms);
  return r;
}

}  // namespace

TEST_CASE("add counts from zero, stores decimal text a get reads, and refuses a key holding other bytes") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  CHECK(t.handle(1, op_req(1, RendezvousRequest::ADD, {"n"}, 2), 0us, out)->number() == 2);
  CHECK(t.handle(2, op_req(1, RendezvousRequest::ADD, {"n"}, -5), 0us, out)->number() == -3);
  CHECK(t.handle(3, get_req(1, {"n"}), 0us, out)->values(0) == "-3");
  REQUIRE(t.handle(4, set_req(1, "s", "abc"), 0us, out)->status() == RendezvousResponse::OK);
  CHECK(t.handle(5, op_req(1, RendezvousRequest::ADD, {"s"}, 1), 0us, out)->status() == RendezvousResponse::REFUSED);
  CHECK(t.handle(7, op_req(1, RendezvousRequest::ADD, {"n"}, INT64_MAX), 0us, out)->status() ==
        RendezvousResponse::OK);  // -3 + max fits; + max again would not
  CHECK(t.handle(8, op_req(1, RendezvousRequest::ADD, {"n"}, INT64_MAX), 0us, out)->status() ==
        RendezvousResponse::REFUSED);
}

TEST_CASE("a long poll on a counter is answered by the add that moves it, or at its timeout with it as is") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  CHECK(t.handle(1, op_req(1, RendezvousRequest::ADD, {"arrived"}, 1), 0us, out)->number() == 1);
  CHECK(t.handle(2, poll_req(1, "arrived", 0, 50), 0us, out)->number() == 1);  // already moved: at once
  CHECK_FALSE(t.handle(3, poll_req(1, "arrived", 1, 50), 0us, out));           // parked
  CHECK(t.handle(4, op_req(1, RendezvousRequest::ADD, {"arrived"}, 1), 10us, out)->number() == 2);
  REQUIRE(out.size() == 1);
  CHECK(out[0].waiter == 3);
  CHECK(out[0].response.number() == 2);
  out.clear();
  CHECK_FALSE(t.handle(5, poll_req(1, "arrived", 2, 50), 20us, out));
  t.expire(60ms, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].response.status() == RendezvousResponse::OK);
  CHECK(out[0].response.number() == 2);
}

TEST_CASE("check, delete and num_keys see only their epoch") {
  RendezvousTable t;
  std::vector<RendezvousTable::Reply> out;
  t.handle(1, set_req(1, "a/1", "x"), 0us, out);
  t.handle(2, set_req(1, "a/2", "y"), 0us, out);
  t.handle(3, set_req(1, "b", "z"), 0us, out);
  t.handle(4, set_req(2, "a/3", "w"), 0us, out);
  CHECK(t.handle(5, op_req(1, RendezvousRequest::CHECK, {"a/1", "b"}), 0us, out)->number() == 1);
  CHECK(t.handle(6, op_req(1, RendezvousRequest::CHECK, {"a/1", "a/3"}), 0us, out)->number() == 0);
  CHECK(t.handle(7, op_req(1, RendezvousRequest::NUM_KEYS, {"a/"}), 0us, out)->number() == 2);
  CHECK(t.handle(8, op_req(1, RendezvousRequest::NUM_KEYS, {""}), 0us, out)->number() == 3);
  CHECK(t.handle(9, op_req(1, RendezvousRequest::DELETE, {"a/1"}), 0us, out)->number() == 1);
  CHECK(t.handle(10, op_req(1, RendezvousRequest::DELETE, {"a/1"}), 0us, out)->number() == 0);
  CHECK(t.handle(11, op_req(1, RendezvousRequest::NUM_KEYS, {"a/"}), 0us, out)->number() == 1);
  CHECK(t.handle(12, op_req(2, RendezvousRequest::NUM_KEYS, {"a/"}), 0us, out)->number() == 1);
}

TEST_CASE(
    "the bounds follow the view's world: a legal job of 25,000 x 8 ranks never meets them, a small one keeps the "
    "defaults") {
  const RendezvousTable::Limits base;
  struct Row {
    uint64_t world;
    size_t keys, waiters, bytes;
  };
  const Row rows[] = {
      {0, 65536, 4096, size_t{64} << 20},
      {8, 65536, 4096, size_t{64} << 20},
      {4096, 66560, 8448, size_t{64} << 20},                         // 16 keys per rank: just past the default
      {8192, 132096, 16640, size_t{64} << 20},                       // the old cap: 8,192 x 8 keys
      {200000, 3201024, 400256, 200000 * 2048 + (size_t{1} << 20)},  // 25,000 hosts x 8
      {uint64_t{1} << 40, (size_t{1} << 24) * 16 + 1024, (size_t{1} << 24) * 2 + 256, size_t{1} << 30},
  };
  for (const Row& r : rows) {
    INFO("world " << r.world);
    const auto l = RendezvousTable::limits_for_world(base, r.world);
    CHECK(l.max_keys_per_epoch == r.keys);
    CHECK(l.max_waiters == r.waiters);
    CHECK(l.max_bytes_per_epoch == r.bytes);
    CHECK(l.max_value_bytes == base.max_value_bytes);  // one value stays bounded
    CHECK(l.max_future_epochs == base.max_future_epochs);
  }

  // A table sized for 10,000 ranks takes a key per rank and a report per rank past the default cap of 65,536,
  // and still refuses one more than its bound.
  RendezvousTable::Limits small;
  small.max_keys_per_epoch = 4;
  RendezvousTable t(small);
  std::vector<RendezvousTable::Reply> out;
  CHECK(t.handle(1, set_req(1, "k4", "1"), 0us, out)->status() == RendezvousResponse::OK);
  for (int i = 0; i < 3; ++i) t.handle(2, set_req(1, "x" + std::to_string(i), "1"), 0us, out);
  CHECK(t.handle(3, set_req(1, "over", "1"), 0us, out)->status() == RendezvousResponse::REFUSED);
  t.size_for_world(2);
  CHECK(t.limits().max_keys_per_epoch == 2 * RendezvousTable::kKeysPerRank + 1024);
  size_t accepted = 0;
  for (size_t i = 0; i < 2 * RendezvousTable::kKeysPerRank + 1024; ++i) {
    accepted += t.handle(4, set_req(1, "y" + std::to_string(i), "1"), 0us, out)->status() == RendezvousResponse::OK;
  }
  CHECK(accepted == 2 * RendezvousTable::kKeysPerRank + 1024 - 4);  // up to the bound, the 4 before included
  CHECK(t.handle(5, set_req(1, "z", "1"), 0us, out)->status() == RendezvousResponse::REFUSED);
}
