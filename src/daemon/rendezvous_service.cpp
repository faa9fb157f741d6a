// The RENDEZVOUS channel: decode, hand to the table, answer now or when the table says so.
#include "daemon/rendezvous_service.hpp"

#include "base/log.hpp"
#include "rendezvous.pb.h"

namespace shoal::daemon {
namespace {

std::vector<std::byte> encode(const wire::RendezvousResponse& r) {
  std::vector<std::byte> out(r.ByteSizeLong());
  r.SerializeToArray(out.data(), static_cast<int>(out.size()));
  return out;
}

}  // namespace

RendezvousService::RendezvousService(boost::asio::io_context& io, net::StreamListener& listener,
                                     std::chrono::steady_clock::time_point origin, comm::RendezvousTable::Limits limits)
    : origin_(origin), table_(limits), timer_(io, origin, [this] {
        std::vector<comm::RendezvousTable::Reply> out;
        table_.expire(now(), out);
        deliver(out);
        rearm();
      }) {
  // A wait may last as long as the longest timeout a request may ask for, plus a margin for the reply.
  const auto max_wait = std::chrono::milliseconds(limits.max_timeout_ms) + std::chrono::seconds(5);
  listener.add_async_request_channel(
      wire::Hello::RENDEZVOUS, kMaxRequestBytes, max_wait,
      [this, alive = std::weak_ptr<bool>(alive_)](const net::StreamPeer& peer, std::span<const std::byte> bytes,
                                                  net::StreamListener::Reply reply) -> std::function<void()> {
        if (alive.expired()) return {};
        return on_request(peer, bytes, std::move(reply));
      });
}

RendezvousService::~RendezvousService() {
  alive_.reset();
  timer_.cancel();
}

comm::RendezvousTable::Time RendezvousService::now() const {
  return std::chrono::duration_cast<comm::RendezvousTable::Time>(std::chrono::steady_clock::now() - origin_);
}

void RendezvousService::on_committed(uint64_t epoch, uint64_t world_size) {
  if (world_size != 0) table_.size_for_world(world_size);
  std::vector<comm::RendezvousTable::Reply> out;
  table_.advance(epoch, out);
  if (!out.empty()) {
    log::get(log::Component::comm)
        .info("rendezvous: epoch {} committed; {} waiting request(s) of older epochs told the view changed", epoch,
              out.size());
  }
  deliver(out);
  rearm();
}

std::function<void()> RendezvousService::on_request(const net::StreamPeer& peer, std::span<const std::byte> bytes,
                                                    net::StreamListener::Reply reply) {
  wire::RendezvousRequest request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    log::get(log::Component::comm).warn("rendezvous: malformed request from {} ({})", peer.hello.name, peer.remote);
    reply({});  // close without answering: the client reports a protocol error
    return {};
  }
  const auto waiter = next_waiter_++;
  std::vector<comm::RendezvousTable::Reply> completed;
  auto answer = table_.handle(waiter, request, now(), completed);
  if (answer) {
    reply(encode(*answer));
  } else {
    replies_[waiter] = std::move(reply);
    rearm();
  }
  deliver(completed);
  return [this, waiter, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired()) return;
    table_.cancel(waiter);
    replies_.erase(waiter);
  };
}

void RendezvousService::deliver(std::vector<comm::RendezvousTable::Reply>& replies) {
  for (auto& r : replies) {
    auto it = replies_.find(r.waiter);
    if (it == replies_.end()) continue;  // the connection went away meanwhile
    auto reply = std::move(it->second);
    replies_.erase(it);
    reply(encode(r.response));
  }
  replies.clear();
}

void RendezvousService::rearm() {
  if (auto next = table_.next_deadline()) timer_.arm(*next);
}

}  // namespace shoal::daemon
