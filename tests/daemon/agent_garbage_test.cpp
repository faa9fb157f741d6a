// Garbage on an agent's UDP and TCP port is counted by cause under "rejected" and otherwise ignored:
// the member list stays as it was and the agent keeps running.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <random>

#include "../support/agent_fixture.hpp"
#include "net/host_port.hpp"
#include "net/stream_hello.hpp"
#include "wire/frame.hpp"
#include "wire/packet.hpp"

using shoal::test::AgentCluster;
using namespace std::chrono_literals;

namespace {

sockaddr_in to_sockaddr(const std::string& addr) {
  const auto ip_port = shoal::net::parse_ip_port(addr);
  REQUIRE(ip_port.has_value());
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(ip_port->port);
  sa.sin_addr.s_addr = htonl(ip_port->ip.to_v4().to_uint());
  return sa;
}

void send_udp(const std::string& addr, const std::vector<std::byte>& bytes) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(fd >= 0);
  const sockaddr_in sa = to_sockaddr(addr);
  ::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  ::close(fd);
}

// Connects, sends `bytes`, half-closes, and waits until the agent has closed its side.
void send_tcp(const std::string& addr, const std::vector<std::byte>& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  const sockaddr_in sa = to_sockaddr(addr);
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) == 0);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the agent may close early on a refused header
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  // Wait for the agent to close its side, so that the test does not race its counters.
  char buf[256];
  while (::recv(fd, buf, sizeof(buf), 0) > 0) {
  }
  ::close(fd);
}

std::vector<std::byte> text_bytes(const std::string& s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xFF);
  return out;
}

std::map<std::string, uint64_t> rejected(const AgentCluster& c, const std::string& name) {
  std::map<std::string, uint64_t> out;
  const auto doc = c.members_doc(name);
  if (!doc) return out;
  for (const auto& [cause, n] : doc->rejected.by_cause) out[cause] = n;
  return out;
}

}  // namespace

TEST_CASE("garbage on the UDP and TCP port is counted under rejected and changes nothing") {
  AgentCluster c;
  c.start("target");
  c.start("peer", {c["target"].addr});
  REQUIRE(AgentCluster::eventually(
      [&] {
        return c.all_see({"target", "peer"}, "peer", "alive") && c.all_see({"target", "peer"}, "target", "alive");
      },
      15s));
  const std::string addr = c["target"].addr;
  const auto before = rejected(c, "target");
  REQUIRE(before.count("bad_magic") == 1);

  // UDP: noise, a cut-off header, a header announcing more than arrives, an unknown header
  // version, an oversized datagram, and a well-formed packet of another cluster.
  auto noise = random_bytes(300, 1);
  noise[0] = std::byte{'X'};
  send_udp(addr, noise);
  send_udp(addr, text_bytes("SHL"));
  send_udp(addr, text_bytes(std::string("SHL\x01\x00\x00\x01\x00", 8) + "short"));
  send_udp(addr, text_bytes(std::string("SHL\x09\x00\x00\x00\x00", 8)));
  auto big = random_bytes(4000, 2);
  big[0] = std::byte{'S'};
  send_udp(addr, big);
  auto foreign = shoal::wire::make_envelope("another-cluster", "intruder", 42, "127.0.0.1:9");
  foreign.set_gossip("hello");
  auto foreign_packet = shoal::wire::encode_packet(foreign);
  REQUIRE(foreign_packet.ok());
  send_udp(addr, *foreign_packet);

  // TCP: noise, an oversized length header, a frame cut short, a zero-length frame, a hello of
  // another cluster, and a good hello followed by a truncated request.
  send_tcp(addr, random_bytes(64, 3));
  send_tcp(addr, text_bytes(std::string("\xff\xff\xff\xff\x01", 5)));
  std::string cut_short("\x00\x00\x00\x64\x01", 5);
  cut_short += "only a few bytes";
  send_tcp(addr, text_bytes(cut_short));
  send_tcp(addr, text_bytes(std::string("\x00\x00\x00\x00", 4)));
  {
    auto hello = shoal::net::encode_hello(shoal::wire::make_envelope("another-cluster", "intruder", 42, "127.0.0.1:9"),
                                          shoal::wire::Hello::PUSH_PULL);
    std::vector<std::byte> stream;
    shoal::wire::append_frame(stream, shoal::wire::type_byte(shoal::wire::FrameType::hello), hello);
    send_tcp(addr, stream);
  }
  {
    auto hello = shoal::net::encode_hello(shoal::wire::make_envelope("test", "intruder", 42, "127.0.0.1:9"),
                                          shoal::wire::Hello::PUSH_PULL);
    std::vector<std::byte> stream;
    shoal::wire::append_frame(stream, shoal::wire::type_byte(shoal::wire::FrameType::hello), hello);
    const auto request = text_bytes(std::string("\x00\x00\x10\x00\x02partial", 12));
    stream.insert(stream.end(), request.begin(), request.end());
    send_tcp(addr, stream);
  }

  std::map<std::string, uint64_t> after;
  const auto grew = [&](const std::string& cause, uint64_t by) { return after[cause] >= before.at(cause) + by; };
  const bool counted = AgentCluster::eventually(
      [&] {
        after = rejected(c, "target");
        return !after.empty() && grew("bad_magic", 1) && grew("truncated", 4) && grew("bad_version", 1) &&
               grew("oversized", 2) && grew("wrong_cluster", 2) && grew("malformed", 1);
      },
      5s);
  std::string counts;
  for (const auto& [cause, n] : after)
    counts += cause + ": " + std::to_string(before.at(cause)) + " -> " + std::to_string(n) + "\n";
  INFO("rejected by cause:\n" << counts << "target log:\n" << c.log_tail("target"));
  CHECK(counted);

  // Nothing else changed: two members, both alive, no intruder, and the agent still answers.
  const auto view = c.view_of("target");
  CHECK(view.size() == 2);
  CHECK(view.count("intruder") == 0);
  CHECK(AgentCluster::eventually(
      [&] {
        return c.all_see({"target", "peer"}, "peer", "alive") && c.all_see({"target", "peer"}, "target", "alive");
      },
      10s));
  CHECK_FALSE(c["target"].process->wait_exit(0ms).has_value());
}
