// Two agents on loopback for the checkpoint benchmarks, started, joined and waited for until both have
// committed the same view of the two of them.
#include "replica_pair.hpp"

#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ckpt_shm/replica_store.hpp"
#include "daemon/agent.hpp"
#include "membership/view.hpp"
#include "ranks/rank_table.hpp"

namespace shoal::bench {

// One agent on a thread of its own, remembering the newest view it committed.
struct ReplicaPair::Host {
  std::unique_ptr<daemon::Agent> agent;
  std::thread thread;
  mutable std::mutex mu;
  std::optional<membership::View> view;  // guarded by mu

  Host(const std::string& name, const ReplicaPair::Options& o, const std::string& store,
       std::vector<net::HostPort> seeds) {
    daemon::AgentConfig cfg;
    cfg.name = name;
    cfg.bind = {"127.0.0.1", 0};
    cfg.seeds = std::move(seeds);
    cfg.gossip.cluster_id = "bench";
    cfg.key_file = o.key_file;
    cfg.warn_open_cluster = false;  // loopback only
    cfg.meta.host = name;           // two hosts for placement, though on one machine...
    cfg.meta.slots = 1;             // ...with one rank each
    cfg.ckpt.job = o.job;
    cfg.ckpt.store = store;
    cfg.ckpt.stall_timeout = o.stall_timeout;
    // One replica kept, and the memory of the one before as the spare the next receive writes into:
    // 4 GiB versions fit a 24 GiB machine.
    cfg.ckpt.keep_per_rank = 1;
    agent = std::make_unique<daemon::Agent>(std::move(cfg));
    agent->add_view_observer([this](const membership::View& v) {
      std::lock_guard lock(mu);
      view = v;
    });
    if (auto ok = agent->start(); !ok) throw std::runtime_error("agent " + name + ": " + ok.error().message);
    thread = std::thread([a = agent.get()] { (void)a->run(); });
  }
  std::optional<membership::View> committed() const {
    std::lock_guard lock(mu);
    return view;
  }
  ~Host() {
    agent->stop_now();
    thread.join();
    (void)ckpt::ReplicaStore::remove_all(agent->checkpoints().config().store);
  }
};

ReplicaPair::ReplicaPair(const Options& options) : job_(options.job) {
  origin_ = std::make_unique<Host>("origin", options, job_ + "-origin-agent", std::vector<net::HostPort>{});
  peer_ = std::make_unique<Host>("peer", options, job_ + "-peer",
                                 std::vector<net::HostPort>{{"127.0.0.1", origin_->agent->port()}});
  const auto both = [](const std::optional<membership::View>& v) {
    return v && v->size() == 2 && v->find("origin") != nullptr && v->find("peer") != nullptr;
  };
  const auto deadline = std::chrono::steady_clock::now() + options.view_timeout;
  std::optional<membership::View> view;
  for (;;) {
    const auto at_origin = origin_->committed();
    view = peer_->committed();  // what the peer's admission judges pushes by
    if (both(at_origin) && both(view) && at_origin->epoch() == view->epoch()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("the origin and peer agents committed no view of both within " +
                               std::to_string(options.view_timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const ranks::RankTable table(*view);
  const auto mine = table.ranks_of("origin");
  if (mine.size() != 1) throw std::runtime_error("the committed view gives origin no single rank");
  rank_ = mine[0].global_rank;
  world_ = table.world_size();
}

ReplicaPair::~ReplicaPair() {
  peer_.reset();
  origin_.reset();
}

ckpt_service::TransferPeer ReplicaPair::to_peer() const {
  return {peer_->agent->addr(), origin_->agent->hello(wire::Hello::CKPT_STREAM)};
}

}  // namespace shoal::bench
