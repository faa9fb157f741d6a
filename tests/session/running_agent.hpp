// Test support: one real Agent on loopback, run on a thread of the test process, for tests that talk
// to its TCP services (the rendezvous store) from the same process.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/agent.hpp"
#include "session/rendezvous_client.hpp"
#include "support/eventually.hpp"

namespace shoal::test {

struct RunningAgent {
  std::unique_ptr<daemon::Agent> agent;
  std::thread thread;
  std::atomic<uint64_t> epoch{0};

  RunningAgent(const std::string& name, std::vector<net::HostPort> seeds) {
    daemon::AgentConfig cfg;
    cfg.name = name;
    cfg.bind = {"127.0.0.1", 0};
    cfg.seeds = std::move(seeds);
    cfg.gossip.cluster_id = "rendezvous-test";
    cfg.meta.slots = 1;
    agent = std::make_unique<daemon::Agent>(std::move(cfg));
    agent->add_view_observer([this](const membership::View& v) { epoch = v.epoch(); });
    REQUIRE(agent->start().ok());
    thread = std::thread([a = agent.get()] { (void)a->run(); });
  }
  ~RunningAgent() {
    agent->stop_now();
    thread.join();
  }

  std::unique_ptr<session::NetworkRendezvousStore> store(uint64_t at_epoch,
                                                         std::function<bool()> superseded = {}) const {
    session::NetworkRendezvousStore::Options o;
    o.store_addr = agent->addr();
    o.epoch = at_epoch;
    o.hello = agent->hello(wire::Hello::RENDEZVOUS);
    o.superseded = std::move(superseded);
    return std::make_unique<session::NetworkRendezvousStore>(o);
  }
};


}  // namespace shoal::test
