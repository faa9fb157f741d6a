// Reading frames off TCP, with Asio and with BlockingConn: a frame larger than the first read arrives
// whole and leaves the next one on the stream; a frame cut short fails as truncated; the payload grows
// with what arrives. And BlockingConn's blocking calls keep their deadline and their cancel flag.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/arrival_buffer.hpp"
#include "net/blocking_conn.hpp"
#include "net/frame_io.hpp"
#include "../support/tcp_pair.hpp"

using namespace std::chrono_literals;
using shoal::net::BlockingConn;
using Clock = std::chrono::steady_clock;

namespace {

// A connected pair of TCP sockets on loopback, as raw descriptors (a: the client end, b: the server's).
struct SocketPair {
  shoal::test::LoopbackTcpPair pair;
  int& a = pair.client;
  int& b = pair.server;
};

std::vector<std::byte> payload_of(size_t n, uint8_t seed) {
  std::vector<std::byte> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = std::byte(static_cast<uint8_t>(i * 31 + seed));
  return p;
}

// A frame header announcing `payload` bytes (and its type byte).
std::vector<std::byte> header_of(uint32_t payload, uint8_t type) {
  const uint32_t len = payload + 1;
  return {std::byte(len >> 24), std::byte(len >> 16), std::byte(len >> 8), std::byte(len), std::byte(type)};
}

// Writes everything from another thread, so that a large write cannot block the reading test.
std::thread write_in_background(int fd, std::vector<std::byte> bytes, bool close_after) {
  return std::thread([fd, bytes = std::move(bytes), close_after] {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    if (close_after) ::shutdown(fd, SHUT_WR);
  });
}

std::vector<std::byte> two_frames(const std::vector<std::byte>& big, const std::vector<std::byte>& small) {
  std::vector<std::byte> wire;
  shoal::wire::append_frame(wire, 7, big);
  shoal::wire::append_frame(wire, 9, small);
  return wire;
}

}  // namespace

TEST_CASE("a frame body's buffer grows with what has arrived, by doubling from 64 KiB, up to the announced length") {
  using shoal::net::grow_for_arrival;
  CHECK(grow_for_arrival(0, 10) == 10);
  CHECK(grow_for_arrival(0, 1u << 20) == 64u * 1024);
  CHECK(grow_for_arrival(64u * 1024, 1u << 20) == 128u * 1024);
  CHECK(grow_for_arrival(512u * 1024, 1u << 20) == 1u << 20);
  CHECK(grow_for_arrival(1u << 20, 1u << 20) == 1u << 20);
}

TEST_CASE("BlockingConn reads a frame larger than its first read whole, and leaves the next frame on the stream") {
  SocketPair p;
  const auto big = payload_of((300u << 10) + 17, 1);
  const auto small = payload_of(5, 2);
  auto writer = write_in_background(p.a, two_frames(big, small), false);
  BlockingConn conn(::dup(p.b));
  auto first = conn.read_frame(1u << 20, Clock::now() + 10s);
  auto second = conn.read_frame(1u << 20, Clock::now() + 10s);
  writer.join();
  REQUIRE_MESSAGE(first, first.error().message);
  CHECK(first->type == 7);
  CHECK(first->payload == big);
  REQUIRE_MESSAGE(second, second.error().message);
  CHECK(second->type == 9);
  CHECK(second->payload == small);
}

TEST_CASE("BlockingConn refuses a frame above the limit before reading it, and fails on one cut short") {
  SocketPair p;
  SUBCASE("above the limit") {
    auto writer = write_in_background(p.a, header_of(5000, 1), false);
    BlockingConn conn(::dup(p.b));
    auto f = conn.read_frame(4096, Clock::now() + 10s);
    writer.join();
    REQUIRE_FALSE(f);
    CHECK(f.error().message.find("above the limit") != std::string::npos);
  }
  SUBCASE("announced large, cut short") {
    auto bytes = header_of(8u << 20, 1);
    const auto some = payload_of(1000, 3);
    bytes.insert(bytes.end(), some.begin(), some.end());
    auto writer = write_in_background(p.a, bytes, true);
    BlockingConn conn(::dup(p.b));
    auto f = conn.read_frame(16u << 20, Clock::now() + 10s);
    writer.join();
    REQUIRE_FALSE(f);
    CHECK(f.error().message.find("closed") != std::string::npos);
  }
}

TEST_CASE("async_read_frame reads a frame larger than its first read whole, then the next one") {
  boost::asio::io_context io;
  SocketPair p;
  boost::asio::ip::tcp::socket socket(io, boost::asio::ip::tcp::v4(), ::dup(p.b));
  const auto big = payload_of((200u << 10) + 3, 4);
  const auto small = payload_of(0, 5);  // a frame of its type byte alone
  auto writer = write_in_background(p.a, two_frames(big, small), false);
  std::vector<shoal::wire::Frame> got;
  std::optional<shoal::net::FrameReadError> error;
  std::function<void(shoal::Result<shoal::wire::Frame, shoal::net::FrameReadError>)> on_frame =
      [&](shoal::Result<shoal::wire::Frame, shoal::net::FrameReadError> r) {
        if (!r) {
          error = r.error();
          return;
        }
        got.push_back(std::move(*r));
        if (got.size() < 2) shoal::net::async_read_frame(socket, 1u << 20, on_frame);
      };
  shoal::net::async_read_frame(socket, 1u << 20, on_frame);
  io.run_for(10s);
  writer.join();
  REQUIRE_FALSE(error.has_value());
  REQUIRE(got.size() == 2);
  CHECK(got[0].type == 7);
  CHECK(got[0].payload == big);
  CHECK(got[1].type == 9);
  CHECK(got[1].payload.empty());
}

TEST_CASE("async_read_frame reports a frame cut short as truncated and one above the limit as rejected") {
  boost::asio::io_context io;
  SocketPair p;
  boost::asio::ip::tcp::socket socket(io, boost::asio::ip::tcp::v4(), ::dup(p.b));
  std::vector<std::byte> bytes;
  shoal::net::FrameReadError::Kind expected{};
  size_t limit = 16u << 20;
  SUBCASE("cut short") {
    bytes = header_of(8u << 20, 1);
    const auto some = payload_of(70u << 10, 6);  // past the first read's 64 KiB
    bytes.insert(bytes.end(), some.begin(), some.end());
    expected = shoal::net::FrameReadError::Kind::truncated;
  }
  SUBCASE("above the limit") {
    bytes = header_of(5000, 1);
    limit = 4096;
    expected = shoal::net::FrameReadError::Kind::rejected;
  }
  auto writer = write_in_background(p.a, bytes, true);
  std::optional<shoal::Result<shoal::wire::Frame, shoal::net::FrameReadError>> result;
  shoal::net::async_read_frame(socket, limit, [&](auto r) { result.emplace(std::move(r)); });
  io.run_for(10s);
  writer.join();
  REQUIRE(result.has_value());
  REQUIRE_FALSE(*result);
  CHECK(result->error().kind == expected);
}

TEST_CASE("a BlockingConn read with nothing arriving ends at its deadline, or at once when cancelled") {
  SocketPair p;
  BlockingConn conn(::dup(p.b));
  std::byte buf[16];
  SUBCASE("deadline") {
    const auto started = Clock::now();
    auto r = conn.read_some(buf, started + 250ms);
    const auto took = Clock::now() - started;
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("timed out") != std::string::npos);
    CHECK(took >= 250ms);
    CHECK(took < 2s);
  }
  SUBCASE("cancel") {
    std::atomic<bool> cancel{false};
    conn.set_cancel(&cancel);
    std::thread canceller([&] {
      std::this_thread::sleep_for(150ms);
      cancel = true;
    });
    const auto started = Clock::now();
    auto r = conn.read_some(buf, started + 60s);
    const auto took = Clock::now() - started;
    canceller.join();
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("cancelled") != std::string::npos);
    CHECK(took < 2s);
  }
}

TEST_CASE("a BlockingConn write into a peer that does not read ends at its deadline") {
  SocketPair p;
  BlockingConn conn(::dup(p.a));
  // Far more than both socket buffers hold, so the write blocks once they are full.
  const std::vector<std::byte> lots(64u << 20);
  const auto started = Clock::now();
  auto r = conn.write_all(lots, started + 500ms);
  const auto took = Clock::now() - started;
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("timed out") != std::string::npos);
  CHECK(took < 3s);
  CHECK(conn.bytes_written() > 0);
  CHECK(conn.bytes_written() < lots.size());
}
