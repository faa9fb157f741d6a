// The netns lab's intruder: from an outsider's namespace, sends one well-formed request of every kind an
// agent serves over TCP (a join's push-pull, a probe, a view proposal, rendezvous set and get, checkpoint
// push and fetch) to an agent, sealed with the key file given or with none, and prints one JSON line per
// request: whether any answer came back. A keyed agent must answer none of them.
//
// Usage: shoal-lab-intruder HOST:PORT (KEY_FILE | -)
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt.pb.h"
#include "gossip.pb.h"
#include "membership.pb.h"
#include "net/cluster_seal.hpp"
#include "net/stream_client.hpp"
#include "net/stream_hello.hpp"
#include "rendezvous.pb.h"
#include "wire/packet.hpp"

using namespace std::chrono_literals;
using namespace shoal;

namespace {

std::vector<std::byte> bytes_of(const google::protobuf::MessageLite& m) {
  const auto s = m.SerializeAsString();
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

struct Attempt {
  const char* request;
  wire::Hello::Channel channel;
  std::vector<std::byte> body;
};

std::vector<Attempt> attempts() {
  std::vector<Attempt> out;
  gossip::pb::StreamRequest join;
  join.mutable_state();
  join.set_want_state(true);
  out.push_back({"join", wire::Hello::PUSH_PULL, bytes_of(join)});
  gossip::pb::StreamRequest probe;
  probe.mutable_ping();
  out.push_back({"probe", wire::Hello::PROBE, bytes_of(probe)});
  wire::ViewRequest view;
  view.set_epoch(1'000'000);
  view.set_from_name("intruder");
  view.mutable_commit();
  out.push_back({"view_commit", wire::Hello::VIEW, bytes_of(view)});
  wire::RendezvousRequest set;
  set.set_op(wire::RendezvousRequest::SET);
  set.add_keys("MASTER_ADDR");
  set.set_value("10.0.0.66");
  out.push_back({"rendezvous_set", wire::Hello::RENDEZVOUS, bytes_of(set)});
  wire::RendezvousRequest get;
  get.set_op(wire::RendezvousRequest::GET);
  get.add_keys("MASTER_ADDR");
  get.set_timeout_ms(500);
  out.push_back({"rendezvous_get", wire::Hello::RENDEZVOUS, bytes_of(get)});
  wire::CkptRequest push;
  push.set_kind(wire::CkptRequest::PUSH);
  push.set_job("default");
  push.set_step(1'000'000'000);
  push.set_stream_bytes(4096);
  out.push_back({"ckpt_push", wire::Hello::CKPT_STREAM, bytes_of(push)});
  wire::CkptRequest fetch;
  fetch.set_kind(wire::CkptRequest::FETCH);
  fetch.set_job("default");
  out.push_back({"ckpt_fetch", wire::Hello::CKPT_STREAM, bytes_of(fetch)});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HOST:PORT (KEY_FILE | -)\n", argv[0]);
    return 2;
  }
  const std::string to = argv[1];
  std::shared_ptr<net::ClusterSeal> seal;
  if (std::string(argv[2]) != "-") {
    auto ring = net::load_cluster_keys(argv[2]);
    if (!ring || !ring->has_value()) {
      std::fprintf(stderr, "cannot load the key file %s\n", argv[2]);
      return 2;
    }
    seal = std::make_shared<net::ClusterSeal>(std::move(**ring));
  }
  const auto sender = wire::make_envelope("lab", "intruder", 1, "10.0.0.66:7946");
  for (const auto& a : attempts()) {
    const net::OutgoingHello hello(net::encode_hello(sender, a.channel), seal);
    boost::asio::io_context io;
    net::StreamClient client(io);
    std::optional<std::vector<std::byte>> answer;
    client.request(to, hello, a.body, std::chrono::steady_clock::now() + 2s, 1 << 20,
                   [&](std::optional<std::vector<std::byte>> r, const net::StreamFailure&) { answer = std::move(r); });
    io.run_for(3s);
    std::printf("{\"request\": \"%s\", \"answered\": %s}\n", a.request, answer ? "true" : "false");
    std::fflush(stdout);
  }
  return 0;
}
