// The shell's socket pieces in one process, on loopback: TCP channels (hello, request, response,
// limits, refusals by cause) and the control socket (serve, refuse a second owner, clean up).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <mutex>
#include <optional>
#include <thread>

#include "../support/process.hpp"
#include "control/client.hpp"
#include "control/server.hpp"
#include "daemon/agent.hpp"
#include "net/host_port.hpp"
#include "net/port_binding.hpp"
#include "net/stream_client.hpp"
#include "net/stream_listener.hpp"
#include "wire/packet.hpp"

using namespace shoal;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct Reply {
  bool done = false;
  std::optional<std::vector<std::byte>> bytes;
  std::string why;
};

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

struct Loopback {
  asio::io_context io;
  std::unique_ptr<shoal::net::StreamListener> listener;
  std::string addr;
  shoal::net::StreamClient client{io};

  Loopback() {
    asio::ip::tcp::acceptor acceptor(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    addr = shoal::net::ip_port_text(acceptor.local_endpoint().address(), acceptor.local_endpoint().port());
    shoal::net::StreamListener::Limits limits;
    limits.connection_timeout = 1s;
    listener = std::make_unique<shoal::net::StreamListener>(std::move(acceptor), "c1", limits);
    // PUSH_PULL echoes the request reversed, with the sender's name in front.
    listener->add_request_channel(wire::Hello::PUSH_PULL, 64,
                                  [](const shoal::net::StreamPeer& peer, std::span<const std::byte> request) {
                                    std::vector<std::byte> out = bytes_of(peer.hello.name + ":");
                                    out.insert(out.end(), request.rbegin(), request.rend());
                                    return out;
                                  });
    listener->start();
  }

  Reply ask(const std::string& cluster, wire::Hello::Channel channel, const std::string& request, std::string to = "") {
    Reply r;
    auto hello = shoal::net::encode_hello(wire::make_envelope(cluster, "asker", 1, "127.0.0.1:1"), channel);
    client.request(to.empty() ? addr : to, hello, bytes_of(request), shoal::net::StreamClient::Clock::now() + 2s, 1024,
                   [&](std::optional<std::vector<std::byte>> b, const shoal::net::StreamFailure& failure) {
                     r.done = true;
                     r.bytes = std::move(b);
                     r.why = failure.why;
                   });
    io.restart();
    while (!r.done && io.run_one_for(3s) > 0) {
    }
    // Let the server side finish its bookkeeping.
    io.restart();
    io.run_for(50ms);
    return r;
  }
};

}  // namespace

TEST_CASE("a request on a served channel gets the handler's response") {
  Loopback lo;
  const auto r = lo.ask("c1", wire::Hello::PUSH_PULL, "abc");
  REQUIRE(r.bytes.has_value());
  CHECK(*r.bytes == bytes_of("asker:cba"));
  CHECK(lo.listener->rejected().total() == 0);
}

TEST_CASE("refused connections are counted by cause and the client sees a failure") {
  Loopback lo;
  auto other_cluster = lo.ask("c2", wire::Hello::PUSH_PULL, "abc");
  CHECK_FALSE(other_cluster.bytes.has_value());
  CHECK(lo.listener->rejected().get(wire::RejectCause::wrong_cluster) == 1);

  auto unserved = lo.ask("c1", wire::Hello::CKPT_STREAM, "abc");
  CHECK_FALSE(unserved.bytes.has_value());
  CHECK(lo.listener->rejected().get(wire::RejectCause::bad_version) == 1);

  auto too_big = lo.ask("c1", wire::Hello::PUSH_PULL, std::string(65, 'x'));
  CHECK_FALSE(too_big.bytes.has_value());
  CHECK(lo.listener->rejected().get(wire::RejectCause::oversized) == 1);

  // And the listener still serves.
  CHECK(lo.ask("c1", wire::Hello::PUSH_PULL, "ok").bytes.has_value());
}

TEST_CASE("a request to a port where nothing listens fails with a reason") {
  Loopback lo;
  asio::ip::tcp::acceptor probe(lo.io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto port = probe.local_endpoint().port();
  probe.close();
  const auto r = lo.ask("c1", wire::Hello::PUSH_PULL, "abc", "127.0.0.1:" + std::to_string(port));
  CHECK(r.done);
  CHECK_FALSE(r.bytes.has_value());
  CHECK(r.why.find("connect") != std::string::npos);
  const auto bad = lo.ask("c1", wire::Hello::PUSH_PULL, "abc", "localhost:1");
  CHECK_FALSE(bad.bytes.has_value());
  CHECK(bad.why.find("numeric") != std::string::npos);
}

TEST_CASE("the control socket serves requests, refuses a second owner and removes its file on close") {
  test::TempDir dir;
  const std::string path = dir.path() + "/c.sock";
  asio::io_context io;
  shoal::control::ControlHandlers handlers;
  handlers.add("ping", "", [](std::span<const std::string>) { return std::string("{\"pong\":true}"); });
  shoal::control::ControlServer server(io, handlers);
  REQUIRE(server.open(path).ok());

  // The blocking client needs the loop running elsewhere: serve from a helper thread.
  std::thread loop([&] { io.run_for(3s); });
  auto reply = shoal::control::control_request(path, "ping", 2s);
  shoal::control::ControlServer second(io, handlers);
  auto second_open = second.open(path);
  io.stop();
  loop.join();
  REQUIRE(reply.ok());
  CHECK(*reply == "{\"pong\":true}\n");
  REQUIRE_FALSE(second_open.ok());
  CHECK(second_open.error().message.find("another agent") != std::string::npos);

  server.close();
  struct stat st {};
  CHECK(::stat(path.c_str(), &st) != 0);
  CHECK_FALSE(shoal::control::control_request(path, "ping", 1s).ok());
}

TEST_CASE("the agent's port is one number for UDP and TCP, and a taken port is refused by protocol") {
  asio::io_context io;
  const auto loopback = asio::ip::make_address("127.0.0.1");
  auto first = shoal::net::bind_shared_port(io, loopback, 0);
  REQUIRE(first.ok());
  CHECK(first->port != 0);
  CHECK(first->tcp.local_endpoint().port() == first->port);
  CHECK(first->udp.local_endpoint().port() == first->port);

  auto again = shoal::net::bind_shared_port(io, loopback, first->port);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().message.find("in use (TCP)") != std::string::npos);

  // Only the UDP side taken: the TCP bind succeeds, the UDP bind names the conflict.
  const uint16_t udp_port = first->port;
  first->tcp.close();
  auto udp_taken = shoal::net::bind_shared_port(io, loopback, udp_port);
  REQUIRE_FALSE(udp_taken.ok());
  CHECK(udp_taken.error().message.find("in use (UDP)") != std::string::npos);
}

TEST_CASE("two embedded agents on threads of one process join, report events and stop on request") {
  test::TempDir dir;
  const auto config = [&](const std::string& name) {
    shoal::daemon::AgentConfig cfg;
    cfg.name = name;
    cfg.bind = {"127.0.0.1", 0};
    cfg.control_path = dir.path() + "/" + name + ".sock";
    cfg.gossip.cluster_id = "embedded";
    return cfg;
  };
  shoal::daemon::Agent a(config("a"));
  REQUIRE(a.start().ok());
  auto b_cfg = config("b");
  b_cfg.seeds = {{"127.0.0.1", a.port()}};
  shoal::daemon::Agent b(b_cfg);
  std::mutex mu;
  std::vector<std::string> seen_by_b;
  b.add_member_observer([&](const gossip::MemberEvent& e) {
    std::lock_guard lock(mu);
    seen_by_b.push_back(e.member.id.name + " " + gossip::to_string(e.member.state));
  });
  REQUIRE(b.start().ok());
  CHECK(b.addr() == "127.0.0.1:" + std::to_string(b.port()));

  Status a_outcome = fail("not run"), b_outcome = fail("not run");
  std::thread ta([&] { a_outcome = a.run(); });
  std::thread tb([&] { b_outcome = b.run(); });
  const auto saw = [&](const std::string& what) {
    std::lock_guard lock(mu);
    return std::find(seen_by_b.begin(), seen_by_b.end(), what) != seen_by_b.end();
  };
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!saw("a alive") && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  CHECK(saw("a alive"));

  a.stop();
  ta.join();
  CHECK(a_outcome.ok());
  const auto left_deadline = std::chrono::steady_clock::now() + 5s;
  while (!saw("a left") && std::chrono::steady_clock::now() < left_deadline) std::this_thread::sleep_for(20ms);
  CHECK(saw("a left"));
  b.stop();
  tb.join();
  CHECK(b_outcome.ok());
  struct stat st {};
  CHECK(::stat((dir.path() + "/a.sock").c_str(), &st) != 0);
}
