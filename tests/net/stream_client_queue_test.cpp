// StreamClient under local backpressure: requests past the in-flight bound wait in a FIFO queue and are
// answered as slots free (a burst of 300 through 4 slots: every one answered), a queued request still
// fails at its own deadline, and only a full queue fails a request at once.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

net::OutgoingHello open_hello() {
  return net::OutgoingHello(
      net::encode_hello(wire::make_envelope("c1", "asker", 1, "127.0.0.1:1"), wire::Hello::PUSH_PULL),
      std::make_shared<net::ClusterSeal>(std::nullopt));
}

std::vector<std::byte> one_byte(size_t i) { return {static_cast<std::byte>(i % 251)}; }

struct Outcome {
  size_t answered = 0, failed = 0;
  std::vector<size_t> order;  // request numbers, in the order their answers came
  std::vector<std::string> why;
};

}  // namespace

TEST_CASE("a burst of 300 requests through 4 slots is answered in full, oldest first") {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto addr = net::ip_port_text(acceptor.local_endpoint().address(), acceptor.local_endpoint().port());
  net::StreamListener::Limits limits;
  limits.connection_timeout = 2s;
  net::StreamListener listener(std::move(acceptor), "c1", limits);
  listener.set_seal(std::make_shared<net::ClusterSeal>(std::nullopt), "");
  listener.add_request_channel(wire::Hello::PUSH_PULL, 64,
                               [](const net::StreamPeer&, std::span<const std::byte> request) {
                                 return std::vector<std::byte>(request.begin(), request.end());
                               });
  listener.start();

  net::StreamClient client(io, 4);
  Outcome out;
  constexpr size_t kRequests = 300;
  for (size_t i = 0; i < kRequests; ++i) {
    client.request(addr, open_hello(), one_byte(i), Clock::now() + 20s, 64,
                   [&out, i](std::optional<std::vector<std::byte>> r, const net::StreamFailure& f) {
                     if (r && r->size() == 1 && (*r)[0] == static_cast<std::byte>(i % 251)) {
                       ++out.answered;
                     } else {
                       ++out.failed;
                       out.why.push_back(f.why);
                     }
                     out.order.push_back(i);
                   });
  }
  CHECK(client.in_flight() == 4);
  CHECK(client.queued() == kRequests - 4);
  const auto until = Clock::now() + 30s;
  while (out.order.size() < kRequests && Clock::now() < until) io.run_one_for(100ms);
  listener.close();
  CHECK(out.answered == kRequests);
  CHECK(out.failed == 0);
  CHECK(client.ever_queued() == kRequests - 4);
  CHECK(client.queued() == 0);
  // FIFO: no queued request is started before one queued earlier, so a late one cannot overtake by more
  // than the slots that were running beside it.
  for (size_t k = 0; k < out.order.size(); ++k) CHECK(out.order[k] + 4 > k);
}

TEST_CASE("a queued request fails at its own deadline, not when a slot frees") {
  asio::io_context io;
  // A peer that accepts and never answers: the one slot stays busy until its 3 s deadline.
  asio::ip::tcp::acceptor silent(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto addr = net::ip_port_text(silent.local_endpoint().address(), silent.local_endpoint().port());
  net::StreamClient client(io, 1);
  Outcome out;
  std::optional<Clock::duration> queued_failed_after;
  const auto t0 = Clock::now();
  client.request(addr, open_hello(), one_byte(0), t0 + 3s, 64,
                 [&](std::optional<std::vector<std::byte>>, const net::StreamFailure& f) {
                   ++out.failed;
                   out.why.push_back(f.why);
                 });
  client.request(addr, open_hello(), one_byte(1), t0 + 200ms, 64,
                 [&](std::optional<std::vector<std::byte>> r, const net::StreamFailure& f) {
                   CHECK_FALSE(r);
                   CHECK(f.why == "timed out while queued");
                   queued_failed_after = Clock::now() - t0;
                 });
  CHECK(client.queued() == 1);
  while (!queued_failed_after && Clock::now() - t0 < 5s) io.run_one_for(50ms);
  REQUIRE(queued_failed_after);
  CHECK(*queued_failed_after >= 200ms);
  CHECK(*queued_failed_after < 2s);
  CHECK(out.failed == 0);  // the exchange in flight is still waiting for its own deadline
}

TEST_CASE("only a full queue fails a request at once") {
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto addr = net::ip_port_text(silent.local_endpoint().address(), silent.local_endpoint().port());
  net::StreamClient client(io, 1, 2);
  std::vector<std::string> why;
  for (int i = 0; i < 4; ++i) {
    client.request(addr, open_hello(), one_byte(0), Clock::now() + 1s, 64,
                   [&why](std::optional<std::vector<std::byte>>, const net::StreamFailure& f) { why.push_back(f.why); });
  }
  CHECK(client.in_flight() == 1);
  CHECK(client.queued() == 2);
  io.run_one_for(500ms);  // the refusal is posted, never run inside request()
  REQUIRE(why.size() == 1);
  CHECK(why[0] == "too many requests queued");
}
