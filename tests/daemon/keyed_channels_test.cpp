// Every TCP channel of a keyed agent (gossip push-pull and probe, view agreement, rendezvous, checkpoint
// streams) lets only a key holder past the handshake: a client with another key or with none gets no
// response on any of them, and each attempt is counted by its cause.
#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/agent.hpp"
#include "net/cluster_seal.hpp"
#include "net/stream_client.hpp"
#include "net/stream_hello.hpp"
#include "wire/cluster_key.hpp"
#include "wire/packet.hpp"

using namespace std::chrono_literals;
using namespace shoal;

namespace {

// A key file of mode 0600 (mkstemp), removed when the test ends.
struct KeyFile {
  std::string path;
  KeyFile() {
    char name[] = "/tmp/shoal-test-key.XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    const std::string text = wire::generate_key_text();
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
    path = name;
  }
  ~KeyFile() { ::unlink(path.c_str()); }
};

struct KeyedAgent {
  std::unique_ptr<daemon::Agent> agent;
  std::thread thread;
  explicit KeyedAgent(const std::string& key_file) {
    daemon::AgentConfig cfg;
    cfg.name = "a";
    cfg.bind = {"127.0.0.1", 0};
    cfg.gossip.cluster_id = "keyed-channels";
    cfg.key_file = key_file;
    cfg.ckpt.job = "keyed-channels-" + std::to_string(::getpid());
    agent = std::make_unique<daemon::Agent>(std::move(cfg));
    REQUIRE(agent->start().ok());
    thread = std::thread([a = agent.get()] { (void)a->run(); });
  }
  ~KeyedAgent() {
    agent->stop_now();
    thread.join();
  }
  uint64_t refused(wire::RejectCause cause) {
    std::promise<uint64_t> count;
    boost::asio::post(agent->io(), [&] { count.set_value(agent->streams().rejected().get(cause)); });
    return count.get_future().get();
  }
};

// One request on `channel` with `seal` (null: none): the response, or nullopt.
std::optional<std::vector<std::byte>> ask(const std::string& to, wire::Hello::Channel channel,
                                          std::shared_ptr<net::ClusterSeal> seal) {
  const auto sender = wire::make_envelope("keyed-channels", "intruder", 1, "127.0.0.1:9");
  const net::OutgoingHello hello(net::encode_hello(sender, channel), std::move(seal));
  boost::asio::io_context io;
  net::StreamClient client(io);
  std::optional<std::vector<std::byte>> answer;
  // Not a valid request of any channel: what matters is that a stranger's is never even read.
  client.request(to, hello, std::vector<std::byte>(16, std::byte{0x08}), std::chrono::steady_clock::now() + 2s, 1 << 20,
                 [&](std::optional<std::vector<std::byte>> r, const shoal::net::StreamFailure&) { answer = std::move(r); });
  io.run_for(3s);
  return answer;
}

bool eventually(const std::function<bool()>& cond) {
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

}  // namespace

TEST_CASE("a keyed agent answers nothing on any channel to a client with another key or none") {
  const KeyFile key, other_key;
  KeyedAgent a(key.path);
  auto other_ring = net::load_cluster_keys(other_key.path);
  REQUIRE(other_ring);
  REQUIRE(other_ring->has_value());
  const auto wrong = std::make_shared<net::ClusterSeal>(std::move(*other_ring));
  const wire::Hello::Channel channels[] = {wire::Hello::PUSH_PULL, wire::Hello::PROBE, wire::Hello::VIEW,
                                           wire::Hello::RENDEZVOUS, wire::Hello::CKPT_STREAM};
  uint64_t n = 0;
  for (const auto channel : channels) {
    CAPTURE(wire::Hello::Channel_Name(channel));
    ++n;
    CHECK_FALSE(ask(a.agent->addr(), channel, wrong).has_value());
    CHECK(eventually([&] { return a.refused(wire::RejectCause::bad_auth) == n; }));
    CHECK_FALSE(ask(a.agent->addr(), channel, nullptr).has_value());
    CHECK(eventually([&] { return a.refused(wire::RejectCause::no_key) == n; }));
  }
  // A client with the key gets past the handshake on every channel (whatever the channel then makes of
  // its nonsense request): nothing more is counted as a key failure.
  auto right_ring = net::load_cluster_keys(key.path);
  REQUIRE(right_ring);
  const auto right = std::make_shared<net::ClusterSeal>(std::move(*right_ring));
  for (const auto channel : channels) (void)ask(a.agent->addr(), channel, right);
  CHECK(a.refused(wire::RejectCause::bad_auth) == n);
  CHECK(a.refused(wire::RejectCause::no_key) == n);
  CHECK(a.refused(wire::RejectCause::wrong_destination) == 0);
}
