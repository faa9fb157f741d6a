// The cluster key on real agents over loopback: hosts with another key or none never join; replayed,
// tampered and stale datagrams are refused and counted; a key rotates in three SIGHUP steps while the
// committed view stays as it is; a connected trainer finds the key through its agent.
#include "wire/cluster_key.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "../support/agent_fixture.hpp"
#include "wire/sealed_packet.hpp"

using namespace std::chrono_literals;
using shoal::test::AgentCluster;

namespace {

std::string write_key_file(const AgentCluster& c, const std::string& name, const std::vector<std::string>& keys) {
  const std::string path = c.dir() + "/" + name;
  std::ofstream out(path, std::ios::trunc);
  out << "# test key file\n";
  for (const auto& k : keys) out << k << "\n";
  out.close();
  ::chmod(path.c_str(), 0600);
  return path;
}

// A fresh key's base64 line.
std::string new_key() {
  const std::string text = shoal::wire::generate_key_text();
  const auto nl = text.find('\n');
  return text.substr(nl + 1, text.find('\n', nl + 1) - nl - 1);
}

uint64_t rejected(const AgentCluster& c, const std::string& agent, const std::string& cause) {
  const auto doc = c.members_doc(agent);
  return doc ? doc->rejected.find(cause).value_or(0) : 0;
}

uint64_t epoch_of(const AgentCluster& c, const std::string& agent) {
  const auto doc = c.request<shoal::control::ViewReply>(agent, "view");
  return doc ? doc->epoch : 0;
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void send_udp(const std::string& addr, const std::vector<std::byte>& bytes) {
  const auto colon = addr.rfind(':');
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(addr.substr(colon + 1))));
  REQUIRE(::inet_pton(AF_INET, addr.substr(0, colon).c_str(), &to.sin_addr) == 1);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(fd >= 0);
  CHECK(::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
        static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

}  // namespace

TEST_CASE("hosts with another key or with none never appear in a keyed cluster's member lists") {
  AgentCluster c;
  const std::string k1 = write_key_file(c, "k1", {new_key()});
  const std::string k2 = write_key_file(c, "k2", {new_key()});
  c.start("a", {}, {"--key-file", k1});
  c.start("b", {c["a"].addr}, {"--key-file", k1});
  c.start("other-key", {c["a"].addr}, {"--key-file", k2});
  c.start("no-key", {c["a"].addr});
  REQUIRE_MESSAGE(AgentCluster::eventually([&] { return c.all_see({"a", "b"}, "b", "alive"); }, 10s), c.log_tail("b"));
  // Long enough for several join attempts and probe rounds of the outsiders.
  REQUIRE(AgentCluster::eventually([&] { return rejected(c, "a", "bad_auth") >= 2 && rejected(c, "a", "no_key") >= 2; },
                                   10s));
  std::this_thread::sleep_for(1500ms);
  for (const char* observer : {"a", "b"}) {
    const auto view = c.view_of(observer);
    CHECK(view.size() == 2);
    CHECK(!view.contains("other-key"));
    CHECK(!view.contains("no-key"));
  }
  CHECK(c.view_of("other-key").size() == 1);  // it knows only itself
  CHECK(c.log_tail("no-key", 200).find("the cluster is open") != std::string::npos);
  CHECK(c.log_tail("a", 400).find("key id") != std::string::npos);  // the refusal says why
  const auto keyed = c.request<shoal::control::StatusReply>("a", "status");
  REQUIRE(keyed.has_value());
  CHECK(keyed->keyed);  // status, view --json and shoal_cluster_keyed say whether a cluster runs keyed
  const auto open = c.request<shoal::control::ViewReply>("no-key", "view");
  REQUIRE(open.has_value());
  CHECK_FALSE(open->keyed);
}

TEST_CASE("replayed, tampered and stale datagrams under the right key are refused and counted") {
  AgentCluster c;
  const std::string key = new_key();
  const std::string file = write_key_file(c, "k", {key});
  c.start("a", {}, {"--key-file", file});
  auto ring = shoal::wire::parse_key_text(key, "test");
  REQUIRE(ring);
  shoal::wire::PacketSealer sealer(*ring);
  const std::vector<std::byte> payload(64, std::byte{0x42});  // sealed right, but no gossip packet inside

  const auto sealed = sealer.seal(payload, c["a"].addr, unix_ms());
  send_udp(c["a"].addr, sealed);
  REQUIRE(AgentCluster::eventually([&] { return rejected(c, "a", "bad_magic") == 1; }, 5s));  // opened: the core's turn
  send_udp(c["a"].addr, sealed);
  CHECK(AgentCluster::eventually([&] { return rejected(c, "a", "replayed") == 1; }, 5s));

  auto tampered = sealer.seal(payload, c["a"].addr, unix_ms());
  tampered[tampered.size() - 20] ^= std::byte{0x01};
  send_udp(c["a"].addr, tampered);
  CHECK(AgentCluster::eventually([&] { return rejected(c, "a", "bad_auth") == 1; }, 5s));

  send_udp(c["a"].addr, sealer.seal(payload, c["a"].addr, unix_ms() - 10 * 60 * 1000));  // sent "ten minutes ago"
  CHECK(AgentCluster::eventually([&] { return rejected(c, "a", "stale") == 1; }, 5s));
  CHECK(rejected(c, "a", "bad_magic") == 1);  // none of the refused ones reached the core
}

TEST_CASE("a datagram sealed for another host is refused as wrong_destination, also when it is fresh") {
  AgentCluster c;
  const std::string key = new_key();
  const std::string file = write_key_file(c, "k", {key});
  c.start("a", {}, {"--key-file", file});
  c.start("b", {c["a"].addr}, {"--key-file", file});
  REQUIRE_MESSAGE(AgentCluster::eventually([&] { return c.all_see({"a", "b"}, "b", "alive"); }, 10s), c.log_tail("b"));
  auto ring = shoal::wire::parse_key_text(key, "test");
  REQUIRE(ring);
  shoal::wire::PacketSealer sealer(*ring);
  const std::vector<std::byte> payload(64, std::byte{0x42});
  // Sealed for b and sent to a, as a datagram captured on its way to b and replayed to a would be: a
  // sender and counter a never saw, so only the destination can refuse it.
  const uint64_t before = rejected(c, "a", "wrong_destination");
  CHECK(before == 0);  // the cluster's own datagrams and connections always name the right host
  send_udp(c["a"].addr, sealer.seal(payload, c["b"].addr, unix_ms()));
  CHECK(AgentCluster::eventually([&] { return rejected(c, "a", "wrong_destination") == before + 1; }, 5s));
  CHECK(rejected(c, "a", "bad_magic") == 0);  // it never reached the core
  CHECK(c.log_tail("a", 400).find("wrong_destination") != std::string::npos);
  // Gossip itself never trips over it: a and b keep seeing each other alive.
  CHECK(c.view_of("a").at("b").state == "alive");
}

TEST_CASE("a key rotates in three SIGHUP steps while the committed view stays as it is") {
  AgentCluster c;
  const std::string old_key = new_key(), new_key_line = new_key();
  const std::vector<std::string> names = {"a", "b", "c"};
  std::map<std::string, std::string> files;
  for (const auto& n : names) files[n] = write_key_file(c, "key-" + n, {old_key});
  c.start("a", {}, {"--key-file", files["a"], "--min-hosts", "3"});
  c.start("b", {c["a"].addr}, {"--key-file", files["b"], "--min-hosts", "3"});
  c.start("c", {c["a"].addr}, {"--key-file", files["c"], "--min-hosts", "3"});
  REQUIRE_MESSAGE(AgentCluster::eventually([&] { return epoch_of(c, "a") > 0 && c.all_see(names, "c", "alive"); }, 15s),
                  c.log_tail("a"));
  REQUIRE(AgentCluster::eventually([&] { return epoch_of(c, "b") == epoch_of(c, "a"); }, 5s));
  const uint64_t epoch = epoch_of(c, "a");

  const std::vector<std::vector<std::string>> steps = {
      {old_key, new_key_line},  // 1. the new key is accepted everywhere
      {new_key_line, old_key},  // 2. it seals everywhere; the old one is still accepted
      {new_key_line},           // 3. the old key is gone
  };
  for (const auto& step : steps) {
    // One host at a time, as an operator's loop over hosts would: the hosts differ for a while.
    for (const auto& n : names) {
      write_key_file(c, "key-" + n, step);
      c[n].process->send_signal(SIGHUP);
      std::this_thread::sleep_for(300ms);
    }
    std::this_thread::sleep_for(1s);
    for (const auto& n : names) {
      CHECK_MESSAGE(c.log_tail(n, 400).find("cluster key reloaded") != std::string::npos, c.log_tail(n));
    }
  }
  std::this_thread::sleep_for(1500ms);
  for (const auto& observer : names) {
    for (const auto& subject : names) CHECK(c.view_of(observer).at(subject).state == "alive");
    CHECK(epoch_of(c, observer) == epoch);  // nobody was lost: no view change at all
  }
  // Only the new key opens the door now.
  const std::string stale_file = write_key_file(c, "key-old", {old_key});
  const std::string fresh_file = write_key_file(c, "key-new", {new_key_line});
  c.start("late-old", {c["a"].addr}, {"--key-file", stale_file});
  c.start("late-new", {c["a"].addr}, {"--key-file", fresh_file});
  CHECK(AgentCluster::eventually([&] { return c.all_see({"a", "b", "c"}, "late-new", "alive"); }, 10s));
  CHECK(!c.view_of("a").contains("late-old"));
}
