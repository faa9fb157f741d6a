// Real keyed agents on loopback under a flood of idle TCP connections from 127.0.0.1 -- the address the
// members themselves use: a member still joins, the view still commits with every member, and the flooded
// agent counts the connections it closed (shoal_rejected_total{cause="overloaded"}).
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <fstream>
#include <thread>

#include "../support/agent_fixture.hpp"
#include "wire/cluster_key.hpp"

using namespace std::chrono_literals;
using shoal::test::AgentCluster;
using Clock = std::chrono::steady_clock;

namespace {

std::string key_file(const AgentCluster& c) {
  const std::string text = shoal::wire::generate_key_text();
  const auto nl = text.find('\n');
  const std::string path = c.dir() + "/cluster.key";
  std::ofstream out(path, std::ios::trunc);
  out << text.substr(nl + 1, text.find('\n', nl + 1) - nl - 1) << "\n";
  out.close();
  ::chmod(path.c_str(), 0600);
  return path;
}

int idle_connection(const std::string& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(addr.substr(addr.rfind(':') + 1))));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  return fd;
}

// Holds `count` idle connections to `addr` open, replacing the oldest every `every`, until destroyed.
class IdleFlood {
 public:
  IdleFlood(std::string addr, size_t count, std::chrono::milliseconds every)
      : thread_([this, addr = std::move(addr), count, every] {
          std::deque<int> held;
          while (!stop_) {
            held.push_back(idle_connection(addr));
            if (held.size() > count) {
              ::close(held.front());
              held.pop_front();
            }
            if (held.size() >= count) std::this_thread::sleep_for(every);
          }
          for (int fd : held) ::close(fd);
        }) {}
  ~IdleFlood() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

size_t view_size(const AgentCluster& c, const std::string& name) {
  const auto doc = c.request<shoal::control::ViewReply>(name, "view");
  return doc && doc->status == "stable" ? doc->members.size() : 0;
}

}  // namespace

TEST_CASE("a keyed cluster commits its view while one member's port is flooded with idle connections from loopback") {
  AgentCluster c;
  const std::string key = key_file(c);
  c.start("a", {}, {"--key-file", key});
  REQUIRE(AgentCluster::eventually([&] { return view_size(c, "a") == 1; }, 15s));
  {
    IdleFlood flood(c["a"].addr, 500, 5ms);
    std::this_thread::sleep_for(500ms);
    c.start("b", {c["a"].addr}, {"--key-file", key});
    c.start("c", {c["a"].addr}, {"--key-file", key});
    CHECK(AgentCluster::eventually([&] { return view_size(c, "a") == 3 && view_size(c, "b") == 3; }, 30s));
    const auto doc = c.members_doc("a");
    REQUIRE(doc.has_value());
    CHECK(doc->rejected.find("overloaded").value_or(0) > 0);
  }
}
