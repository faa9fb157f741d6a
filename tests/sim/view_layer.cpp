// The view keeper as a Layer: feeding it gossip's member list, carrying its requests as streams on the
// layer's channel, and reporting its commits (and, when asked, the acceptances it received).
#include "view_layer.hpp"

#include <cstring>

#include "addresses.hpp"
#include "membership/desired_view.hpp"
#include "membership/view_codec.hpp"

namespace shoal::sim {

ViewLayer::ViewLayer(uint32_t member, membership::Config cfg, gossip::Identity self, uint64_t seed,
                     const std::vector<ViewObserver*>& observers, bool track_accepts, gossip::Time coalesce)
    : member_(member),
      keeper_(std::move(cfg), std::move(self), seed),
      coalesce_(coalesce),
      observers_(observers),
      track_accepts_(track_accepts) {}

void ViewLayer::on_start(gossip::Time, gossip::Effects&) {
  // Nothing to do: the gossip core's first events (itself, its seeds) reach on_member_events.
}

void ViewLayer::on_member_events(std::span<const gossip::MemberEvent>, const gossip::Swim& gossip, gossip::Time now,
                                 gossip::Effects& out) {
  // The harness calls once per core call with all the changes of that call: the same coalescing the
  // agent does by posting one update per burst of changes.
  gossip_ = &gossip;
  if (coalesce_ == gossip::Time(0)) {
    feed(gossip, now, out);
  } else if (!feed_due_) {
    feed_due_ = now + coalesce_;
    out.wake_no_later_than(*feed_due_);
  }
}

void ViewLayer::feed(const gossip::Swim& gossip, gossip::Time now, gossip::Effects& out) {
  feed_due_.reset();
  scratch_.clear();
  keeper_.on_members(gossip.members(), now, scratch_);
  perform(scratch_, now, out);
}

void ViewLayer::on_packet(const std::string&, std::span<const std::byte>, gossip::Time, gossip::Effects&) {
  // View agreement uses streams only (TCP in the agent); a datagram on this channel is not ours.
}

std::vector<std::byte> ViewLayer::on_stream_request(const std::string&, std::span<const std::byte> bytes,
                                                    gossip::Time now, gossip::Effects& out) {
  scratch_.clear();
  std::vector<std::byte> response = keeper_.on_request(bytes, now, scratch_);
  perform(scratch_, now, out);
  return response;
}

void ViewLayer::on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, gossip::Time now,
                                   gossip::Effects& out) {
  if (track_accepts_) {
    const auto it = accepts_.find(token);
    if (it != accepts_.end()) {
      const AcceptSent sent = it->second;
      accepts_.erase(it);
      if (bytes) {
        auto resp = membership::decode_response(*bytes);
        if (resp && resp->verdict() == wire::ViewResponse::ACCEPTED && resp->acceptor()) {
          for (ViewObserver* o : observers_) {
            o->on_accepted(member_, sent.to, resp->generation(), sent.epoch, sent.hash, now);
          }
        }
      }
    }
  }
  scratch_.clear();
  keeper_.on_response(token, bytes, now, scratch_);
  perform(scratch_, now, out);
}

void ViewLayer::on_tick(gossip::Time now, gossip::Effects& out) {
  if (feed_due_) {
    if (now >= *feed_due_) {
      feed(*gossip_, now, out);
    } else {
      out.wake_no_later_than(*feed_due_);
    }
  }
  scratch_.clear();
  if (force_requested_) {
    force_requested_ = false;
    last_force_ = keeper_.force(now, scratch_);
    perform(scratch_, now, out);
  }
  keeper_.on_tick(now, scratch_);
  perform(scratch_, now, out);
}

void ViewLayer::perform(membership::KeeperOutput& kout, gossip::Time now, gossip::Effects& out) {
  for (membership::ViewRequestOut& r : kout.requests) {
    if (track_accepts_) {
      const bool same = r.bytes.size() == last_accept_bytes_.size() &&
                        std::memcmp(r.bytes.data(), last_accept_bytes_.data(), r.bytes.size()) == 0;
      if (!same) {
        auto req = membership::decode_request(r.bytes);
        last_accept_bytes_.clear();
        if (req && req->has_accept()) {
          last_accept_bytes_ = r.bytes;
          last_accept_epoch_ = req->epoch();
          last_accept_hash_ = req->accept().view().hash();
        }
      }
      const auto to = index_of_addr(r.to);
      if (!last_accept_bytes_.empty() && to) accepts_[r.token] = AcceptSent{*to, last_accept_epoch_, last_accept_hash_};
    }
    out.streams.push_back(gossip::StreamRequest{r.token, std::move(r.to), std::move(r.bytes), r.deadline});
  }
  for (const membership::View& v : kout.committed) {
    for (ViewObserver* o : observers_) o->on_commit(member_, keeper_.self().generation, v, now);
    auto joiners = membership::vouched_by(v);
    vouched_.insert(vouched_.end(), std::make_move_iterator(joiners.begin()), std::make_move_iterator(joiners.end()));
  }
  if (kout.wake_at) out.wake_no_later_than(*kout.wake_at);
  kout.clear();
}

LayerFactory ViewKeepers::factory() {
  return [this](uint32_t member, const gossip::Identity& self, uint64_t seed) {
    std::vector<std::unique_ptr<Layer>> layers;
    if (const auto it = makers_.find(member); it != makers_.end()) {
      layers.push_back(it->second(member, cfg_, self, seed, observers_, track_accepts_, coalesce_));
    } else {
      layers.push_back(std::make_unique<ViewLayer>(member, cfg_, self, seed, observers_, track_accepts_, coalesce_));
    }
    return layers;
  };
}

ViewLayer* ViewKeepers::of(Cluster& c, uint32_t m) { return dynamic_cast<ViewLayer*>(c.layer(m, 0)); }

}  // namespace shoal::sim
