// The TCP side of the core: joining through seeds, push-pull anti-entropy (digest first, full
// state only when the digests differ), the fallback probe, and the periodic re-contact of seeds
// and dead members that lets a healed partition merge again.
#include <algorithm>
#include <string_view>
#include <utility>

#include "base/log.hpp"
#include "gossip/push_pull.hpp"
#include "gossip/swim_core.hpp"

namespace shoal::gossip {

Time SwimCore::push_pull_interval() const {
  // memberlist's scaling: one more interval per doubling above 32 members keeps the cluster-wide
  // rate of exchanges (and the full states they may carry) in check.
  const double n = static_cast<double>(table_.live_count());
  int64_t mult = 1;
  if (n > 32) mult = static_cast<int64_t>(std::ceil(std::log2(n) - std::log2(32.0))) + 1;
  return ms(cfg_.push_pull_interval_ms) * mult;
}

uint64_t SwimCore::request(const std::string& to, const pb::StreamRequest& msg, StreamKind kind, uint32_t seq,
                           Time deadline) {
  if (out_ == nullptr || to.empty()) return 0;
  auto bytes = encode_stream(stream_envelope_, msg, cfg_.max_stream_bytes);
  if (!bytes) {
    shoal::log::get(shoal::log::Component::gossip)
        .warn("{}: stream request not sent: {}", self().name, bytes.error().message);
    return 0;
  }
  const uint64_t token = next_token_++;
  streams_.emplace(token, PendingStream{kind, to, seq});
  if (kind == StreamKind::push_pull) ++push_pulls_in_flight_;
  ++stats_.stream_requests_out;
  stats_.stream_bytes_out += bytes->size();
  out_->streams.push_back(StreamRequest{token, to, std::move(*bytes), deadline,
                                        kind == StreamKind::fallback_probe ? StreamPurpose::probe
                                                                           : StreamPurpose::anti_entropy});
  return token;
}

void SwimCore::send_join() {
  pb::StreamRequest req;
  *req.mutable_state() = full_state_of(table_);
  req.set_want_state(true);
  // The next join_fanout seeds of the list (all of them when it is that short), from where the last
  // attempt stopped.
  const size_t ask = std::min<size_t>(seeds_.size(), std::max<uint32_t>(1, cfg_.join_fanout));
  for (size_t k = 0; k < ask; ++k) {
    const std::string& seed = seeds_[(join_cursor_ + k) % seeds_.size()];
    bool pending = false;
    for (const auto& [token, s] : streams_) pending = pending || (s.kind == StreamKind::join && s.peer_addr == seed);
    if (!pending) request(seed, req, StreamKind::join, 0, now_ + ms(cfg_.stream_timeout_ms));
  }
  if (!seeds_.empty()) join_cursor_ = (join_cursor_ + ask) % seeds_.size();
}

void SwimCore::start_push_pull(const std::string& addr, StreamKind kind) {
  if (push_pulls_in_flight_ >= cfg_.push_pull_max_in_flight) return;
  pb::StreamRequest req;
  *req.mutable_digest() = digest_of(table_);
  if (request(addr, req, kind, 0, now_ + ms(cfg_.stream_timeout_ms)) != 0) ++stats_.push_pulls_started;
}

void SwimCore::reconnect() {
  // Which seeds are strangers and which members are dead is a scan of the whole table; in steady
  // state the table does not change between re-contacts, so the last scan is kept with the
  // table's version (the scan costs O(N) per member every interval: O(N^2) for a whole cluster).
  if (!reconnect_scan_ || reconnect_scan_->version != table_.version()) {
    reconnect_scan_ = scan_for_reconnect();
  }
  const ReconnectScan& scan = *reconnect_scan_;
  if (!scan.strangers.empty()) {
    start_push_pull(seeds_[scan.strangers[uniform_index(rng_, scan.strangers.size())]], StreamKind::push_pull);
  }
  if (!scan.dead.empty()) {
    start_push_pull(std::string(table_.at(scan.dead[uniform_index(rng_, scan.dead.size())]).addr()),
                    StreamKind::push_pull);
  }
}

SwimCore::ReconnectScan SwimCore::scan_for_reconnect() const {
  // Seeds that are live members here are in our partition already: only the others are worth a
  // call (a seed list shared by thousands of members must not turn into a stream of calls).
  // The seed list is short and the table may be long: the seeds are sorted (by address, with their
  // positions) and each live record is looked up among them, rather than sorting every live address.
  ReconnectScan scan;
  scan.version = table_.version();
  std::vector<std::pair<std::string_view, size_t>> by_addr;
  by_addr.reserve(seeds_.size());
  for (size_t i = 0; i < seeds_.size(); ++i) by_addr.emplace_back(seeds_[i], i);
  std::sort(by_addr.begin(), by_addr.end());
  std::vector<bool> live_seed(seeds_.size(), false);
  for (uint32_t i = 0; i < table_.size(); ++i) {
    const MemberRef m = table_.at(i);
    const State state = m.state();
    if (state == State::dead && !m.addr().empty()) scan.dead.push_back(i);
    if (!is_live(state) || by_addr.empty()) continue;
    const std::string_view addr = m.addr();
    auto it = std::lower_bound(by_addr.begin(), by_addr.end(), addr,
                               [](const auto& seed, std::string_view a) { return seed.first < a; });
    for (; it != by_addr.end() && it->first == addr; ++it) live_seed[it->second] = true;
  }
  for (size_t i = 0; i < seeds_.size(); ++i) {  // in the seed list's order, so that the draw is too
    if (!live_seed[i]) scan.strangers.push_back(i);
  }
  return scan;
}

void SwimCore::merge_state(const pb::FullState& state, const std::string& peer) {
  if (static_cast<size_t>(state.members_size()) > MemberTable::kMaxStateMembers) {
    log_reject(wire::DecodeError{wire::RejectCause::overloaded,
                                 std::to_string(state.members_size()) + " members > " +
                                     std::to_string(MemberTable::kMaxStateMembers)},
               "a state");
    return;
  }
  bool logged = false;
  for (const pb::Update& u : state.members()) {
    if (!valid(u)) {
      if (!logged) log_reject(wire::DecodeError{wire::RejectCause::malformed, "invalid record in a state"}, "a state");
      logged = true;
      continue;
    }
    const MemberRef known = table_.find(u.name());
    if (known && u.name() != self().name) {
      // Most of a peer's state is what we hold already: skip it without decoding.
      const State claimed = state_of(u.state());
      const Verdict v = judge(known, claimed, u.generation(), u.incarnation());
      if (v == Verdict::stale || (v == Verdict::same && claimed != State::suspect && claimed != State::dead)) continue;
    }
    handle_claim(claim_from_state(u, peer, known), std::string(), true);
  }
}

std::vector<std::byte> SwimCore::on_stream_request(const std::string& from, std::span<const std::byte> bytes, Time now,
                                                   Effects& out) {
  (void)from;  // a connection's source port says nothing: the envelope names the sender
  out_ = &out;
  enter(now);
  ++stats_.stream_requests_in;
  stats_.stream_bytes_in += bytes.size();
  std::vector<std::byte> answer;
  auto env = wire::decode_packet(bytes, stream_limits_);
  pb::StreamRequest req;
  if (!env) {
    log_reject(env.error(), "a stream request");
  } else if (!req.ParseFromString(env->gossip()) || req.kind_case() == pb::StreamRequest::KIND_NOT_SET) {
    log_reject(wire::DecodeError{wire::RejectCause::malformed, "stream request does not parse"}, "a stream request");
  } else if (started_) {
    pb::StreamReply reply;
    switch (req.kind_case()) {
      case pb::StreamRequest::kDigest:
        if (req.digest().hash() == table_.digest()) {
          *reply.mutable_same() = digest_of(table_);
        } else {
          *reply.mutable_state() = full_state_of(table_);
        }
        break;
      case pb::StreamRequest::kState:
        merge_state(req.state(), env->sender().name());
        if (req.want_state()) {
          *reply.mutable_state() = full_state_of(table_);
        } else {
          reply.set_merged(true);
        }
        break;
      case pb::StreamRequest::kPing:
        reply.mutable_ack()->set_seq(req.ping().seq());
        break;
      case pb::StreamRequest::KIND_NOT_SET:
        break;
    }
    auto encoded = encode_stream(stream_envelope_, reply, cfg_.max_stream_bytes);
    if (encoded) {
      answer = std::move(*encoded);
      stats_.stream_bytes_out += answer.size();
    } else {
      shoal::log::get(shoal::log::Component::gossip)
          .warn("{}: stream reply not sent: {}", self().name, encoded.error().message);
    }
  }
  finish(out);
  return answer;
}

void SwimCore::on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, Time now,
                                  Effects& out) {
  out_ = &out;
  enter(now);
  auto it = streams_.find(token);
  if (it == streams_.end()) {
    ++stats_.stale_timers;
    finish(out);
    return;
  }
  const PendingStream ps = std::move(it->second);
  streams_.erase(it);
  if (ps.kind == StreamKind::push_pull && push_pulls_in_flight_ > 0) --push_pulls_in_flight_;
  if (!bytes) {
    if (ps.kind == StreamKind::push_pull) ++stats_.push_pulls_failed;
    finish(out);
    return;
  }
  stats_.stream_bytes_in += bytes->size();
  auto env = wire::decode_packet(*bytes, stream_limits_);
  pb::StreamReply reply;
  if (!env) {
    log_reject(env.error(), "a stream reply");
    finish(out);
    return;
  }
  if (!reply.ParseFromString(env->gossip())) {
    log_reject(wire::DecodeError{wire::RejectCause::malformed, "stream reply does not parse"}, "a stream reply");
    finish(out);
    return;
  }
  const std::string& peer = env->sender().name();
  switch (ps.kind) {
    case StreamKind::join:
      if (reply.has_state()) {
        merging_join_ = true;
        merge_state(reply.state(), peer);
        merging_join_ = false;
        if (!joined_) {
          joined_ = true;
          next_push_pull_at_ = now_ + ms(cfg_.join_retry_ms);
          shoal::log::get(shoal::log::Component::gossip)
              .debug("{}: joined through {} ({} members)", self().name, ps.peer_addr, table_.live_count());
        }
      }
      break;
    case StreamKind::push_pull:
      ++stats_.push_pulls_completed;
      if (reply.has_state()) {
        ++stats_.push_pull_full_exchanges;
        merge_state(reply.state(), peer);
        if (reply.state().hash() != table_.digest()) {
          pb::StreamRequest push;
          *push.mutable_state() = full_state_of(table_);
          request(ps.peer_addr, push, StreamKind::push_state, 0, now_ + ms(cfg_.stream_timeout_ms));
        }
      }
      break;
    case StreamKind::push_state:
      break;
    case StreamKind::fallback_probe:
      if (reply.has_ack() && reply.ack().seq() == ps.seq) {
        auto p = probes_.find(ps.seq);
        if (p != probes_.end() && p->second.target == peer && p->second.generation == env->sender().generation()) {
          ++stats_.fallback_acks;
          finish_probe(ps.seq, true);
        }
      }
      break;
  }
  finish(out);
}

}  // namespace shoal::gossip
