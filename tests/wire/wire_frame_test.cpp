// TCP framing: frames split across reads reassemble; oversized and zero-length frames fail the stream.
#include <doctest/doctest.h>

#include <string>

#include "wire/frame.hpp"

using namespace shoal::wire;

namespace {
std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s)); }
}  // namespace

TEST_CASE("frames fed one byte at a time come out whole and in order") {
  std::vector<std::byte> stream;
  append_frame(stream, 1, bytes_of("hello"));
  append_frame(stream, 2, bytes_of(""));
  append_frame(stream, 3, bytes_of(std::string(1000, 'z')));
  FrameReader reader(4096);
  std::vector<Frame> got;
  for (std::byte b : stream) {
    REQUIRE(reader.feed(std::span(&b, 1)).ok());
    while (auto f = reader.next()) got.push_back(std::move(*f));
  }
  REQUIRE(got.size() == 3);
  CHECK(got[0].type == 1);
  CHECK(std::string(reinterpret_cast<const char*>(got[0].payload.data()), got[0].payload.size()) == "hello");
  CHECK(got[1].type == 2);
  CHECK(got[1].payload.empty());
  CHECK(got[2].payload.size() == 1000);
  CHECK(reader.pending_bytes() == 0);
}

TEST_CASE("a partial frame is held, not delivered") {
  std::vector<std::byte> stream;
  append_frame(stream, 7, bytes_of("abcdef"));
  FrameReader reader(64);
  REQUIRE(reader.feed(std::span(stream.data(), stream.size() - 2)).ok());
  CHECK_FALSE(reader.next().has_value());
  CHECK(reader.pending_bytes() == stream.size() - 2);
}

TEST_CASE("an oversized frame is refused from its header alone and the stream stays failed") {
  std::vector<std::byte> stream;
  append_frame(stream, 1, bytes_of(std::string(100, 'x')));
  FrameReader reader(99);
  auto r = reader.feed(std::span(stream.data(), 5));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == RejectCause::oversized);
  CHECK_FALSE(reader.feed(bytes_of("more")).ok());
}

TEST_CASE("a zero-length frame is malformed") {
  const std::byte zero[4] = {};
  FrameReader reader(64);
  auto r = reader.feed(zero);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == RejectCause::malformed);
}
