// Performing the view keeper's outputs with Asio and routing gossip changes and peers' requests in.
#include "daemon/membership_runtime.hpp"

#include <boost/asio/post.hpp>

#include "base/log.hpp"
#include "membership/view_codec.hpp"
#include "net/stream_hello.hpp"
#include "wire/packet.hpp"

namespace shoal::daemon {
MembershipRuntime::MembershipRuntime(asio::io_context& io, membership::ViewKeeper keeper, const gossip::Swim& swim,
                                     Clock::time_point origin, net::StreamListener& listener,
                                     const std::string& cluster_id, std::shared_ptr<net::ClusterSeal> seal)
    : CoreDriver(io, origin, "view request"), keeper_(std::move(keeper)), swim_(swim) {
  const auto& self = keeper_.self();
  hello_ = net::OutgoingHello(
      net::encode_hello(wire::make_envelope(cluster_id, self.name, self.generation, self.addr), wire::Hello::VIEW),
      std::move(seal));
  listener.add_request_channel(wire::Hello::VIEW, membership::kMaxViewFrameBytes,
                               [this](const net::StreamPeer&, std::span<const std::byte> request) {
                                 if (stopped()) return std::vector<std::byte>{};
                                 membership::KeeperOutput out;
                                 auto response = keeper_.on_request(request, now(), out);
                                 perform(out);
                                 return response;
                               });
}

void MembershipRuntime::gossip_changed() {
  if (update_posted_ || stopped()) return;
  update_posted_ = true;
  asio::post(io_, [this] {
    update_posted_ = false;
    if (stopped()) return;
    membership::KeeperOutput out;
    keeper_.on_members(swim_.members(), now(), out);
    perform(out);
  });
}

void MembershipRuntime::verdict(uint64_t epoch, const std::vector<std::string>& named, uint64_t step) {
  if (stopped()) return;
  membership::KeeperOutput out;
  keeper_.on_verdict(epoch, named, step, now(), out);
  perform(out);
}

Status MembershipRuntime::force() {
  membership::KeeperOutput out;
  auto st = keeper_.force(now(), out);
  perform(out);
  return st;
}

Result<std::vector<std::string>> MembershipRuntime::exclude(const std::vector<std::string>& exclude,
                                                            const std::vector<std::string>& readmit) {
  membership::KeeperOutput out;
  auto named = keeper_.exclude(exclude, readmit, now(), out);
  perform(out);
  return named;
}

void MembershipRuntime::close() { stop(); }

void MembershipRuntime::perform(membership::KeeperOutput& out) {
  if (stopped()) return;
  for (auto& r : out.requests) request(r.to, hello_, std::move(r.bytes), r.deadline, membership::kMaxViewFrameBytes, r.token);
  for (const auto& v : out.committed) {
    for (const auto& o : observers_) o(v);
  }
  wake_at(out.wake_at);
  out.clear();
}

void MembershipRuntime::on_answer(uint64_t token, std::optional<std::span<const std::byte>> response) {
  membership::KeeperOutput next;
  keeper_.on_response(token, response, now(), next);
  perform(next);
}

void MembershipRuntime::on_wake() {
  membership::KeeperOutput out;
  keeper_.on_tick(now(), out);
  perform(out);
}

}  // namespace shoal::daemon
