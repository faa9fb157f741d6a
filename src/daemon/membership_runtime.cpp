// Performing the view keeper's outputs with Asio and routing gossip changes and peers' requests in.
#include "daemon/membership_runtime.hpp"

#include <boost/asio/post.hpp>

#include "base/log.hpp"
#include "membership/view_codec.hpp"
#include "net/stream_hello.hpp"
#include "wire/packet.hpp"

namespace shoal::daemon {
namespace {

spdlog::logger& logger() { return log::get(log::Component::agent); }

}  // namespace

MembershipRuntime::MembershipRuntime(asio::io_context& io, membership::ViewKeeper keeper, const gossip::Swim& swim,
                                     Clock::time_point origin, net::StreamListener& listener,
                                     const std::string& cluster_id, std::shared_ptr<net::ClusterSeal> seal)
    : io_(io), keeper_(std::move(keeper)), swim_(swim), origin_(origin), client_(io), timer_(io, origin, [this] {
        on_wake();
      }) {
  const auto& self = keeper_.self();
  hello_ = net::OutgoingHello(
      net::encode_hello(wire::make_envelope(cluster_id, self.name, self.generation, self.addr), wire::Hello::VIEW),
      std::move(seal));
  listener.add_request_channel(wire::Hello::VIEW, membership::kMaxViewFrameBytes,
                               [this](const net::StreamPeer&, std::span<const std::byte> request) {
                                 if (closed_) return std::vector<std::byte>{};
                                 membership::KeeperOutput out;
                                 auto response = keeper_.on_request(request, now(), out);
                                 perform(out);
                                 return response;
                               });
}

gossip::Time MembershipRuntime::now() const { return std::chrono::duration_cast<gossip::Time>(Clock::now() - origin_); }

void MembershipRuntime::gossip_changed() {
  if (update_posted_ || closed_) return;
  update_posted_ = true;
  asio::post(io_, [this] {
    update_posted_ = false;
    if (closed_) return;
    membership::KeeperOutput out;
    keeper_.on_members(swim_.members(), now(), out);
    perform(out);
  });
}

Status MembershipRuntime::force() {
  membership::KeeperOutput out;
  auto st = keeper_.force(now(), out);
  perform(out);
  return st;
}

void MembershipRuntime::close() {
  closed_ = true;
  timer_.cancel();
}

void MembershipRuntime::perform(membership::KeeperOutput& out) {
  if (closed_) return;
  for (auto& r : out.requests) {
    const uint64_t token = r.token;
    const std::string to = r.to;
    client_.request(r.to, hello_, std::move(r.bytes), origin_ + r.deadline, membership::kMaxViewFrameBytes,
                    [this, token, to](std::optional<std::vector<std::byte>> response, const std::string& why) {
                      if (closed_) return;
                      membership::KeeperOutput next;
                      if (response) {
                        keeper_.on_response(token, std::span<const std::byte>(*response), now(), next);
                      } else {
                        logger().debug("view request to {} failed: {}", to, why);
                        keeper_.on_response(token, std::nullopt, now(), next);
                      }
                      perform(next);
                    });
  }
  for (const auto& v : out.committed) {
    for (const auto& o : observers_) o(v);
  }
  if (out.wake_at) timer_.arm(*out.wake_at);
  out.clear();
}

void MembershipRuntime::on_wake() {
  if (closed_) return;
  membership::KeeperOutput out;
  keeper_.on_tick(now(), out);
  perform(out);
}

}  // namespace shoal::daemon
