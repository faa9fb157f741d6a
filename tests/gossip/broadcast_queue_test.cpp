// The piggyback queue: fewest-sent first, newest first among equals, replacement per member,
// the retransmit limit, the byte budget and overflow.
#include "gossip/broadcast_queue.hpp"

#include <doctest/doctest.h>

using namespace shoal::gossip;

namespace {
std::string entry(char tag, size_t bytes = 10) { return std::string(bytes, tag); }
}  // namespace

TEST_CASE("the newest update goes first among updates sent equally often") {
  BroadcastQueue q(16);
  q.push("a", entry('a'));
  q.push("b", entry('b'));
  std::string out;
  CHECK(q.fill(out, 10, 5) == 1);
  CHECK(out == entry('b'));
}

TEST_CASE("the least-sent update goes first") {
  BroadcastQueue q(16);
  q.push("a", entry('a'));
  std::string out;
  q.fill(out, 100, 5);  // a sent once
  q.push("b", entry('b'));
  out.clear();
  q.fill(out, 10, 5);
  CHECK(out == entry('b'));
  out.clear();
  q.fill(out, 10, 5);  // both sent once now; b is newer
  CHECK(out == entry('b'));
  out.clear();
  q.fill(out, 10, 5);
  CHECK(out == entry('a'));
}

TEST_CASE("a newer update about a member replaces the queued one") {
  BroadcastQueue q(16);
  q.push("a", entry('1'));
  q.push("a", entry('2'));
  CHECK(q.size() == 1);
  std::string out;
  q.fill(out, 100, 5);
  CHECK(out == entry('2'));
}

TEST_CASE("an update leaves the queue after its retransmit limit") {
  BroadcastQueue q(16);
  q.push("a", entry('a'));
  for (int i = 0; i < 3; ++i) {
    std::string out;
    CHECK(q.fill(out, 100, 3) == 1);
  }
  CHECK(q.empty());
  std::string out;
  CHECK(q.fill(out, 100, 3) == 0);
}

TEST_CASE("fill packs updates up to the byte budget and skips ones that do not fit") {
  BroadcastQueue q(16);
  q.push("small", entry('s', 10));
  q.push("big", entry('b', 50));
  std::string out = "hdr";
  CHECK(q.fill(out, 30, 5) == 1);
  CHECK(out == "hdr" + entry('s', 10));
  CHECK(q.transmits("big") == 0);
  CHECK(q.transmits("small") == 1);
  CHECK(q.transmits("none") == -1);
}

TEST_CASE("a full queue drops the most-sent update first and counts it") {
  BroadcastQueue q(2);
  q.push("a", entry('a'));
  std::string out;
  q.fill(out, 100, 10);  // a sent once
  q.push("b", entry('b'));
  q.push("c", entry('c'));
  CHECK(q.size() == 2);
  CHECK(q.dropped() == 1);
  CHECK_FALSE(q.contains("a"));
  CHECK(q.contains("b"));
  CHECK(q.contains("c"));
}
