// Keyed connections end to end on loopback: StreamClient and open_blocking against a StreamListener
// with a cluster key. A request and its response travel sealed; a client with another key, with none, or
// a keyed client at an open listener is refused and counted; a hello captured on its way to one listener
// is refused by another (wrong_destination) and by the same one (replayed); a hello sealed for the
// address the listener advertises opens; a taken-over connection goes on sealing both ways.
#include <doctest/doctest.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/blocking_open.hpp"
#include "net/cluster_seal.hpp"
#include "net/host_port.hpp"
#include "net/stream_client.hpp"
#include "net/stream_hello.hpp"
#include "net/stream_listener.hpp"
#include "wire/packet.hpp"

using namespace std::chrono_literals;
namespace asio = boost::asio;
using namespace shoal;
using Clock = std::chrono::steady_clock;

namespace {

wire::KeyRing ring_of(unsigned char fill) {
  std::array<unsigned char, 32> b{};
  b.fill(fill);
  auto r = wire::KeyRing::from_keys({wire::make_cluster_key(b)});
  REQUIRE(r.ok());
  return *r;
}

std::shared_ptr<net::ClusterSeal> seal_of(std::optional<unsigned char> fill) {
  return std::make_shared<net::ClusterSeal>(fill ? std::optional<wire::KeyRing>(ring_of(*fill)) : std::nullopt);
}

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

std::string text_of(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

net::OutgoingHello hello_for(wire::Hello::Channel channel, std::shared_ptr<net::ClusterSeal> seal) {
  return net::OutgoingHello(net::encode_hello(wire::make_envelope("c1", "asker", 1, "127.0.0.1:1"), channel),
                            std::move(seal));
}

// A listener with an echo channel (PUSH_PULL: the sender's name, then the request reversed) and a
// takeover channel (CKPT_STREAM: reads a frame and 6 MiB of data, answers with their sizes).
struct Server {
  asio::io_context io;
  std::unique_ptr<net::StreamListener> listener;
  std::string addr;
  std::thread loop;
  std::thread taken;

  Server(std::shared_ptr<net::ClusterSeal> seal, std::string advertised = {}) {
    asio::ip::tcp::acceptor acceptor(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    addr = net::ip_port_text(acceptor.local_endpoint().address(), acceptor.local_endpoint().port());
    net::StreamListener::Limits limits;
    limits.connection_timeout = 2s;
    listener = std::make_unique<net::StreamListener>(std::move(acceptor), "c1", limits);
    listener->set_seal(std::move(seal), advertised);
    listener->add_request_channel(wire::Hello::PUSH_PULL, 64,
                                  [](const net::StreamPeer& peer, std::span<const std::byte> request) {
                                    std::vector<std::byte> out = bytes_of(peer.hello.name + ":");
                                    out.insert(out.end(), request.rbegin(), request.rend());
                                    return out;
                                  });
    listener->add_takeover_channel(
        wire::Hello::CKPT_STREAM, 64,
        [this](const net::StreamPeer&, std::span<const std::byte> request, net::BlockingConn conn) {
          const size_t request_bytes = request.size();
          taken = std::thread([request_bytes, conn = std::move(conn)]() mutable {
            std::vector<std::byte> data(6u << 20);
            size_t got = 0;
            while (got < data.size()) {
              auto n = conn.read_data(std::span<std::byte>(data).subspan(got), Clock::now() + 5s);
              if (!n) return;
              got += *n;
            }
            bool pattern_ok = true;
            for (size_t i = 0; i < data.size(); i += 4099) pattern_ok &= data[i] == std::byte(i % 251);
            (void)conn.write_frame(wire::type_byte(wire::FrameType::response),
                                   bytes_of(std::to_string(request_bytes) + " " + std::to_string(got) +
                                            (pattern_ok ? " ok" : " corrupt") + (conn.sealed() ? " sealed" : "")),
                                   Clock::now() + 5s);
          });
        });
    listener->start();
    loop = std::thread([this] { io.run_for(20s); });
  }
  ~Server() {
    asio::post(io, [this] { listener->close(); });
    io.stop();
    loop.join();
    if (taken.joinable()) taken.join();
  }
  uint64_t rejected(wire::RejectCause c) {
    // Read on the loop's thread: the counters belong to it.
    std::promise<uint64_t> p;
    auto f = p.get_future();
    asio::post(io, [&] { p.set_value(listener->rejected().get(c)); });
    return f.get();
  }
  uint64_t rejected_total() {
    std::promise<uint64_t> p;
    auto f = p.get_future();
    asio::post(io, [&] { p.set_value(listener->rejected().total()); });
    return f.get();
  }
  uint64_t rejected_eventually(wire::RejectCause c, uint64_t want) {
    const auto until = Clock::now() + 3s;
    uint64_t n = rejected(c);
    while (n < want && Clock::now() < until) {
      std::this_thread::sleep_for(10ms);
      n = rejected(c);
    }
    return n;
  }
};

struct Answer {
  std::optional<std::vector<std::byte>> bytes;
  std::string why;
  bool refused = false;
};

Answer ask(const std::string& to, const net::OutgoingHello& hello, const std::string& request) {
  asio::io_context io;
  net::StreamClient client(io);
  Answer a;
  client.request(to, hello, bytes_of(request), Clock::now() + 3s, 1024,
                 [&](std::optional<std::vector<std::byte>> b, const shoal::net::StreamFailure& failure) {
                   a.bytes = std::move(b);
                   a.why = failure.why;
                   a.refused = failure.refused;
                 });
  io.run_for(5s);
  return a;
}

}  // namespace

TEST_CASE("a keyed request and its response travel sealed through the handshake") {
  Server s(seal_of(1));
  const auto a = ask(s.addr, hello_for(wire::Hello::PUSH_PULL, seal_of(1)), "abc");
  REQUIRE_MESSAGE(a.bytes.has_value(), a.why);
  CHECK(text_of(*a.bytes) == "asker:cba");
  CHECK(s.rejected_total() == 0);
}

TEST_CASE("a connection to a port nothing listens on is reported refused; a refusal after connecting is not") {
  std::string closed_addr;
  {
    Server gone(seal_of(1));
    closed_addr = gone.addr;
  }  // its port is closed now: the kernel answers a SYN with an RST
  const auto refused = ask(closed_addr, hello_for(wire::Hello::PUSH_PULL, seal_of(1)), "abc");
  CHECK_FALSE(refused.bytes.has_value());
  CHECK(refused.refused);
  Server keyed(seal_of(1));
  const auto wrong_key = ask(keyed.addr, hello_for(wire::Hello::PUSH_PULL, seal_of(2)), "abc");
  CHECK_FALSE(wrong_key.bytes.has_value());
  CHECK_FALSE(wrong_key.refused);  // connected, then turned away: no evidence about the process
}

TEST_CASE("a client with another key or none, and a keyed client at an open listener, are refused and counted") {
  Server keyed(seal_of(1));
  const auto other = ask(keyed.addr, hello_for(wire::Hello::PUSH_PULL, seal_of(2)), "abc");
  CHECK_FALSE(other.bytes.has_value());
  CHECK(keyed.rejected_eventually(wire::RejectCause::bad_auth, 1) == 1);
  const auto none = ask(keyed.addr, hello_for(wire::Hello::PUSH_PULL, nullptr), "abc");
  CHECK_FALSE(none.bytes.has_value());
  CHECK(keyed.rejected_eventually(wire::RejectCause::no_key, 1) == 1);

  Server open(nullptr);
  const auto sealed = ask(open.addr, hello_for(wire::Hello::PUSH_PULL, seal_of(1)), "abc");
  CHECK_FALSE(sealed.bytes.has_value());
  CHECK(open.rejected_eventually(wire::RejectCause::no_key, 1) == 1);
  // The open listener still serves an open client, as before keys existed.
  const auto plain = ask(open.addr, hello_for(wire::Hello::PUSH_PULL, nullptr), "abc");
  REQUIRE(plain.bytes.has_value());
  CHECK(text_of(*plain.bytes) == "asker:cba");
}

TEST_CASE("a hello captured on its way to one host is refused by another, and replayed to its own host") {
  auto key = seal_of(1);
  Server a(key), b(key);
  const auto hello = hello_for(wire::Hello::PUSH_PULL, seal_of(1));
  const net::ConnectionOpening opening = hello.open_to(a.addr);  // what an eavesdropper saw on its way to a
  for (Server* target : {&b, &a}) {
    auto conn = net::BlockingConn::connect(target->addr, Clock::now() + 2s);
    REQUIRE(conn.ok());
    REQUIRE(conn->write_frame(wire::type_byte(wire::FrameType::hello), opening.hello, Clock::now() + 2s));
    // The listener answers a hello it accepts with the handshake's reply; these it closes instead.
    if (target == &a) {
      auto reply = conn->read_frame(net::kMaxHandshakeFrameBytes, Clock::now() + 2s);
      REQUIRE(reply.ok());  // the first time a accepts it: the "original" connection, never finished
      (void)reply;
    } else {
      CHECK_FALSE(conn->read_frame(net::kMaxHandshakeFrameBytes, Clock::now() + 2s).ok());
    }
  }
  CHECK(b.rejected_eventually(wire::RejectCause::wrong_destination, 1) == 1);
  // The same first message to a again: its replay guard has seen it.
  auto conn = net::BlockingConn::connect(a.addr, Clock::now() + 2s);
  REQUIRE(conn.ok());
  REQUIRE(conn->write_frame(wire::type_byte(wire::FrameType::hello), opening.hello, Clock::now() + 2s));
  CHECK_FALSE(conn->read_frame(net::kMaxHandshakeFrameBytes, Clock::now() + 2s).ok());
  CHECK(a.rejected_eventually(wire::RejectCause::replayed, 1) == 1);
  // The first connection to a, which never sent its proof, counts once when it times out or closes.
}

TEST_CASE("a hello sealed for the address a listener advertises opens there, other addresses do not") {
  const std::string advertised = "203.0.113.5:7946";
  Server nat(seal_of(1), advertised);
  // Dialled at 127.0.0.1:PORT, sealed for the advertised address (a host behind NAT).
  auto conn = net::BlockingConn::connect(nat.addr, Clock::now() + 2s);
  REQUIRE(conn.ok());
  REQUIRE(net::open_on(*conn, advertised, hello_for(wire::Hello::PUSH_PULL, seal_of(1)), Clock::now() + 2s));
  REQUIRE(conn->write_frame(wire::type_byte(wire::FrameType::request), bytes_of("xyz"), Clock::now() + 2s));
  auto answer = conn->read_frame(1024, Clock::now() + 2s);
  REQUIRE(answer.ok());
  CHECK(text_of(answer->payload) == "asker:zyx");

  auto elsewhere = net::BlockingConn::connect(nat.addr, Clock::now() + 2s);
  REQUIRE(elsewhere.ok());
  CHECK_FALSE(
      net::open_on(*elsewhere, "203.0.113.6:7946", hello_for(wire::Hello::PUSH_PULL, seal_of(1)), Clock::now() + 2s));
  CHECK(nat.rejected_eventually(wire::RejectCause::wrong_destination, 1) == 1);
}

TEST_CASE("a taken-over keyed connection goes on sealing both ways: request, bulk data, response") {
  Server s(seal_of(1));
  auto conn = net::open_blocking(s.addr, hello_for(wire::Hello::CKPT_STREAM, seal_of(1)), Clock::now() + 3s, nullptr);
  REQUIRE_MESSAGE(conn.ok(), conn.error().message);
  CHECK(conn->sealed());
  REQUIRE(conn->write_frame(wire::type_byte(wire::FrameType::request), bytes_of("push 6 MiB"), Clock::now() + 3s));
  std::vector<std::byte> data(6u << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i % 251);
  REQUIRE(conn->write_data(data, Clock::now() + 5s));
  auto answer = conn->read_frame(1024, Clock::now() + 5s);
  REQUIRE_MESSAGE(answer.ok(), answer.error().message);
  CHECK(text_of(answer->payload) == "10 6291456 ok sealed");
}
