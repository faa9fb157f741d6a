// The Asio runtime of the view keeper: feeds it gossip's member list after every change (coalesced
// per loop turn), serves the VIEW TCP channel, performs its requests with StreamClient, keeps its
// wake-up timer, and tells observers about every committed view. It decides nothing itself.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "gossip/swim.hpp"
#include "membership/view_keeper.hpp"
#include "net/stream_hello.hpp"
#include "daemon/core_driver.hpp"
#include "net/stream_listener.hpp"

namespace shoal::daemon {

namespace asio = boost::asio;

class MembershipRuntime : public CoreDriver {
 public:
  using ViewObserver = std::function<void(const membership::View&)>;

  MembershipRuntime(asio::io_context& io, membership::ViewKeeper keeper, const gossip::Swim& swim,
                    Clock::time_point origin, net::StreamListener& listener, const std::string& cluster_id,
                    std::shared_ptr<net::ClusterSeal> seal = nullptr);
  MembershipRuntime(const MembershipRuntime&) = delete;
  MembershipRuntime& operator=(const MembershipRuntime&) = delete;

  // Gossip changed: hand the keeper the new member list once this loop turn is over.
  void gossip_changed();
  void add_view_observer(ViewObserver o) { observers_.push_back(std::move(o)); }
  // The local trainer's straggler verdict (see ViewKeeper::on_verdict: eviction, when enabled).
  void verdict(uint64_t epoch, const std::vector<std::string>& named, uint64_t step);
  // The operator's override (see ViewKeeper::force).
  Status force();
  // The operator's exclusions (see ViewKeeper::exclude).
  Result<std::vector<std::string>> exclude(const std::vector<std::string>& exclude,
                                           const std::vector<std::string>& readmit);
  void close();

  const membership::ViewKeeper& keeper() const { return keeper_; }

 private:
  void on_wake() override;
  void on_answer(uint64_t token, std::optional<std::span<const std::byte>> response) override;
  void perform(membership::KeeperOutput& out);

  membership::ViewKeeper keeper_;
  const gossip::Swim& swim_;
  net::OutgoingHello hello_;
  std::vector<ViewObserver> observers_;
  bool update_posted_ = false;
};

}  // namespace shoal::daemon
