// How the harness carries the cores' effects: datagrams through the network model, stream requests
// and their answers (or timeouts), timers, member events to observers and layers; and how arrivals
// reach a core, or a paused member's bounded inbox.
#include <algorithm>

#include "addresses.hpp"
#include "cluster.hpp"

namespace shoal::sim {

void Cluster::perform(uint32_t m, uint8_t channel, gossip::Effects& out) {
  Node& n = nodes_[m];
  if (channel == 0 && n.swim && n.swim->self().generation != n.generation) {
    // The core took a new generation of its own accord (to come back after being declared dead).
    n.generation = static_cast<uint32_t>(n.swim->self().generation);
    ledger_.set_subject(m, n.generation, ledger_.live(m));
  }
  for (gossip::SendPacket& p : out.packets) send_packet(m, channel, p);
  for (gossip::StreamRequest& r : out.streams) send_stream(m, channel, r);
  if (channel == 0) {
    // The core names its next deadline after every call (Swim's contract): it replaces the last.
    set_wake(m, 0, out.wake_at.value_or(kNever));
  } else if (out.wake_at) {
    schedule_wake(m, channel, *out.wake_at);
  }
  if (!out.events.empty() && channel == 0) announce(m, out.events);
  if (channel > 0 && channel <= n.layers.size() && n.swim) {
    const auto vouched = n.layers[channel - 1]->take_vouched();
    if (!vouched.empty()) {
      gossip::Effects& fx = scratch();
      n.swim->vouch(vouched, now(), fx);
      perform(m, 0, fx);
      release_scratch();
    }
  }
}

void Cluster::send_packet(uint32_t m, uint8_t channel, gossip::SendPacket& p) {
  MemberCounters& c = nodes_[m].counters;
  ++c.packets_out;
  c.bytes_out += p.bytes.size();
  const auto to = index_of_addr(p.to);
  if (!to || *to >= nodes_.size()) {
    ++undeliverable_;
    return;
  }
  const DatagramFate fate = network_.datagram(m, *to);
  for (uint8_t i = 0; i < fate.copies; ++i) {
    Event e;
    e.at = now() + fate.delay[i];
    e.kind = EventKind::packet;
    e.channel = channel;
    e.node = *to;
    e.from = m;
    e.slot = (i + 1 < fate.copies) ? store(std::vector<std::byte>(p.bytes)) : store(std::move(p.bytes));
    queue_.push(e);
  }
}

void Cluster::send_stream(uint32_t m, uint8_t channel, gossip::StreamRequest& r) {
  Node& n = nodes_[m];
  ++n.counters.streams_out;
  n.counters.stream_bytes_out += r.bytes.size();
  const uint32_t rec = open_stream(m, channel, r.token);
  const uint64_t aux = stream_ref(rec, streams_[rec].seq);
  if (++n.open_streams > opts_.max_open_streams) {  // the message is built only when it is needed
    checker_.check_bound("the open stream requests of " + n.name, n.open_streams, opts_.max_open_streams, now());
  }

  Event deadline;
  deadline.at = r.deadline;
  deadline.kind = EventKind::stream_deadline;
  deadline.node = m;
  deadline.aux = aux;
  queue_.push(deadline);

  if (n.streams_in_flight.size() <= channel) {
    n.streams_in_flight.resize(channel + 1, 0);
    n.waiting_streams.resize(channel + 1);
  }
  if (n.streams_in_flight[channel] >= opts_.streams_in_flight) {  // the agent's client queues it
    StreamRecord& w = streams_[rec];
    w.to = std::move(r.to);
    w.request_slot = store(std::move(r.bytes));
    ++w.pending_refs;
    n.waiting_streams[channel].push_back(aux);
    return;
  }
  launch_stream(m, channel, aux, r.to, std::move(r.bytes));
}

void Cluster::launch_stream(uint32_t m, uint8_t channel, uint64_t aux, const std::string& to_addr,
                            std::vector<std::byte> bytes) {
  Node& n = nodes_[m];
  ++n.streams_in_flight[channel];
  stream_of(aux)->launched = true;
  Event e;
  e.channel = channel;
  e.from = m;
  e.aux = aux;
  const auto to = index_of_addr(to_addr);
  if (!to || *to >= nodes_.size()) {
    ++undeliverable_;
    e.kind = EventKind::stream_response;  // refused at once: no such host
    e.node = m;
    e.slot = kNoBuffer;
    queue_.push(e);
    return;
  }
  if (network_.blocked(m, *to)) return;  // the connection attempt times out at the deadline
  const MemberStatus target = nodes_[*to].status;
  if (target != MemberStatus::running && target != MemberStatus::paused) {
    if (nodes_[*to].silent) return;  // a powered-off host: the attempt times out at the deadline
    // The host is up but nothing listens: refused after one round trip (SYN, RST).
    e.at = now() + network_.stream_delay(m, *to, NetworkModel::Segment::handshake) + network_.stream_delay(*to, m);
    e.kind = EventKind::stream_response;
    e.node = m;
    e.slot = kRefused;
    queue_.push(e);
    return;
  }
  // Connection handshake and the request: three one-way trips.
  e.at = now() + network_.stream_delay(m, *to, NetworkModel::Segment::handshake) +
         network_.stream_delay(*to, m, NetworkModel::Segment::handshake) + network_.stream_delay(m, *to);
  e.kind = EventKind::stream_request;
  e.node = *to;
  e.slot = store(std::move(bytes));
  queue_.push(e);
}

void Cluster::pump_streams(uint32_t m, uint8_t channel) {
  Node& n = nodes_[m];
  if (channel >= n.waiting_streams.size()) return;
  auto& waiting = n.waiting_streams[channel];
  while (!waiting.empty() && n.streams_in_flight[channel] < opts_.streams_in_flight) {
    const uint64_t aux = waiting.front();
    waiting.pop_front();
    StreamRecord* rec = stream_of(aux);
    if (rec == nullptr) continue;
    --rec->pending_refs;
    std::vector<std::byte> bytes;
    if (rec->request_slot != kNoBuffer) {
      bytes = std::move(buffers_[rec->request_slot]);
      release(rec->request_slot);
      rec->request_slot = kNoBuffer;
    }
    if (!rec->open) {  // failed at its deadline while it waited
      maybe_free_stream(aux);
      continue;
    }
    const std::string to = std::move(rec->to);
    launch_stream(m, channel, aux, to, std::move(bytes));
  }
}

void Cluster::drop_waiting_streams(Node& n) {
  for (auto& waiting : n.waiting_streams) {
    for (const uint64_t aux : waiting) {
      StreamRecord* rec = stream_of(aux);
      if (rec == nullptr) continue;
      --rec->pending_refs;
      rec->open = false;  // the requester is gone
      if (rec->request_slot != kNoBuffer) {
        release(rec->request_slot);
        rec->request_slot = kNoBuffer;
      }
      maybe_free_stream(aux);
    }
  }
  n.waiting_streams.clear();
  n.streams_in_flight.clear();
}

void Cluster::schedule_wake(uint32_t m, uint8_t channel, Time t) {
  if (std::max(t, now()) < nodes_[m].wake.ch[channel].at) set_wake(m, channel, t);
}

void Cluster::set_wake(uint32_t m, uint8_t channel, Time t) {
  Wakes& w = nodes_[m].wake;
  if (t != kNever) t = std::max(t, now());
  w.ch[channel].at = t;
  if (t < w.ch[channel].queued) queue_tick(m, channel, t);  // else the queued event comes first
}

void Cluster::queue_tick(uint32_t m, uint8_t channel, Time t) {
  Node& n = nodes_[m];
  n.wake.ch[channel].queued = t;
  Event e;
  e.at = t;
  e.kind = EventKind::tick;
  e.channel = channel;
  e.node = m;
  e.life = n.life;
  queue_.push(e);
}

void Cluster::announce(uint32_t m, std::span<const gossip::MemberEvent> events) {
  for (const gossip::MemberEvent& ev : events) {
    const auto subject = index_of_name(ev.member.id.name);
    if (!subject || *subject >= nodes_.size()) {
      checker_.fail("observer " + nodes_[m].name + " announced an unknown member '" + ev.member.id.name + "'", now());
      return;
    }
    if (!checker_.observe(m, *subject, ev.member, now(), "event")) return;
    trace_.mix(uint64_t(now().count()));
    trace_.mix((uint64_t(m) << 32) | *subject);
    trace_.mix((ev.member.id.generation << 8) | static_cast<uint64_t>(ev.member.state));
    trace_.mix(ev.member.incarnation);
    for (ClusterObserver* o : observers_) o->on_member_event(m, *subject, ev, now());
  }
  for (size_t i = 0; i < nodes_[m].layers.size(); ++i) {
    gossip::Effects& out = scratch();
    nodes_[m].layers[i]->on_member_events(events, *nodes_[m].swim, now(), out);
    perform(m, static_cast<uint8_t>(i + 1), out);
    release_scratch();
  }
}

void Cluster::arrive(const Event& e) {
  Node& n = nodes_[e.node];
  const bool up = n.status == MemberStatus::running || n.status == MemberStatus::paused;
  switch (e.kind) {
    case EventKind::packet:
      if (!up) {
        release(e.slot);
        return;
      }
      if (n.status == MemberStatus::paused) {
        const size_t bytes = buffers_[e.slot].size();
        if (n.inbox_bytes + bytes > opts_.inbox_capacity_bytes) {
          ++n.counters.inbox_dropped;
          release(e.slot);
          return;
        }
        n.inbox.push_back({e.kind, e.channel, e.from, e.slot, e.aux});
        n.inbox_bytes += bytes;
        return;
      }
      break;
    case EventKind::stream_request:
      if (!up) {
        // Died while the request was on its way: the connection is reset.
        release(e.slot);
        if (!network_.blocked(e.node, e.from)) {
          Event r = e;
          r.at = now() + network_.stream_delay(e.node, e.from);
          r.kind = EventKind::stream_response;
          r.node = e.from;
          r.from = e.node;
          r.slot = kNoBuffer;
          queue_.push(r);
        }
        return;
      }
      if (n.status == MemberStatus::paused) {  // accepted by the kernel, served at resume
        n.inbox.push_back({e.kind, e.channel, e.from, e.slot, e.aux});
        return;
      }
      break;
    case EventKind::stream_response: {
      StreamRecord* rec = stream_of(e.aux);
      if (rec == nullptr || !rec->open || rec->life != n.life) {
        if (has_buffer(e.slot)) release(e.slot);
        return;
      }
      if (n.status == MemberStatus::paused) {
        n.inbox.push_back({e.kind, e.channel, e.from, e.slot, e.aux});
        ++rec->pending_refs;
        return;
      }
      break;
    }
    default:
      return;
  }
  deliver(e.node, e.kind, e.channel, e.from, e.slot, e.aux);
}

void Cluster::deliver(uint32_t m, EventKind kind, uint8_t channel, uint32_t from, uint32_t slot, uint64_t aux) {
  switch (kind) {
    case EventKind::packet:
      deliver_packet(m, channel, from, slot);
      break;
    case EventKind::stream_request:
      serve_stream(m, channel, from, slot, aux);
      break;
    case EventKind::stream_response:
      answer_stream(m, slot, aux);
      break;
    default:
      break;
  }
}

void Cluster::deliver_packet(uint32_t m, uint8_t channel, uint32_t from, uint32_t slot) {
  Node& n = nodes_[m];
  const std::span<const std::byte> bytes(buffers_[slot]);
  ++n.counters.packets_in;
  n.counters.bytes_in += bytes.size();
  trace_.mix(uint64_t(now().count()));
  trace_.mix((uint64_t(from) << 32) | m);
  trace_.mix(channel);
  trace_.mix_bytes(bytes);
  gossip::Effects& out = scratch();
  if (channel == 0) {
    n.swim->on_packet(nodes_[from].addr, bytes, now(), out);
  } else if (channel <= n.layers.size()) {
    n.layers[channel - 1]->on_packet(nodes_[from].addr, bytes, now(), out);
  }
  release(slot);
  perform(m, channel, out);
  release_scratch();
}

void Cluster::serve_stream(uint32_t m, uint8_t channel, uint32_t from, uint32_t slot, uint64_t aux) {
  Node& n = nodes_[m];
  const std::span<const std::byte> bytes(buffers_[slot]);
  ++n.counters.streams_in;
  n.counters.stream_bytes_in += bytes.size();
  trace_.mix(uint64_t(now().count()));
  trace_.mix((uint64_t(from) << 32) | m | (uint64_t(1) << 63));
  trace_.mix_bytes(bytes);
  gossip::Effects& out = scratch();
  std::vector<std::byte> response;
  if (channel == 0) {
    response = n.swim->on_stream_request(nodes_[from].addr, bytes, now(), out);
  } else if (channel <= n.layers.size()) {
    response = n.layers[channel - 1]->on_stream_request(nodes_[from].addr, bytes, now(), out);
  }
  release(slot);
  perform(m, channel, out);
  release_scratch();
  n.counters.stream_bytes_out += response.size();
  if (network_.blocked(m, from)) return;  // the answer is lost; the requester times out
  Event e;
  e.at = now() + network_.stream_delay(m, from);
  e.kind = EventKind::stream_response;
  e.channel = channel;
  e.node = from;
  e.from = m;
  e.slot = response.empty() ? kNoBuffer : store(std::move(response));  // empty: closed without an answer
  e.aux = aux;
  queue_.push(e);
}

void Cluster::answer_stream(uint32_t m, uint32_t slot, uint64_t aux) {
  StreamRecord* rec = stream_of(aux);
  Node& n = nodes_[m];
  if (rec == nullptr || !rec->open || rec->life != n.life) {
    if (has_buffer(slot)) release(slot);
    maybe_free_stream(aux);
    return;
  }
  rec->open = false;
  --n.open_streams;
  const bool freed_slot = rec->launched;
  if (freed_slot) {
    rec->launched = false;
    --n.streams_in_flight[rec->channel];
  }
  std::optional<std::span<const std::byte>> bytes;
  const bool refused = slot == kRefused;
  if (has_buffer(slot)) {
    bytes = std::span<const std::byte>(buffers_[slot]);
    n.counters.stream_bytes_in += bytes->size();
  }
  trace_.mix(uint64_t(now().count()));
  trace_.mix((uint64_t(m) << 32) | rec->token);
  if (bytes) trace_.mix_bytes(*bytes);
  const uint8_t channel = rec->channel;
  const uint64_t token = rec->token;
  gossip::Effects& out = scratch();
  if (channel == 0 && refused) {
    n.swim->on_stream_refused(token, now(), out);
  } else if (channel == 0) {
    n.swim->on_stream_response(token, bytes, now(), out);
  } else if (channel <= n.layers.size()) {
    n.layers[channel - 1]->on_stream_response(token, bytes, now(), out);
  }
  if (has_buffer(slot)) release(slot);
  // The freed slot goes to the oldest waiting request before the core's new requests (as the agent's
  // client does), then the core's effects.
  if (freed_slot) pump_streams(m, channel);
  perform(m, channel, out);
  release_scratch();
  maybe_free_stream(aux);
}

void Cluster::on_stream_deadline(const Event& e) {
  StreamRecord* rec = stream_of(e.aux);
  if (rec == nullptr) return;
  rec->deadline_passed = true;
  if (rec->open) {
    Node& n = nodes_[rec->requester];
    if (rec->life != n.life) {
      rec->open = false;  // the requester is gone; nobody waits for this answer
    } else if (n.status == MemberStatus::paused) {
      n.inbox.push_back({EventKind::stream_response, rec->channel, rec->requester, kNoBuffer, e.aux});
      ++rec->pending_refs;
    } else {
      answer_stream(rec->requester, kNoBuffer, e.aux);
      return;  // answer_stream frees the record
    }
  }
  maybe_free_stream(e.aux);
}

void Cluster::on_tick(const Event& e) {
  Node& n = nodes_[e.node];
  if (n.life != e.life || e.channel >= n.wake.size() || n.wake.ch[e.channel].queued != e.at) return;  // superseded
  n.wake.ch[e.channel].queued = kNever;
  const Time wanted = n.wake.ch[e.channel].at;
  if (wanted == kNever) return;
  if (wanted > now()) {  // the core moved its deadline later since this event was queued
    queue_tick(e.node, e.channel, wanted);
    return;
  }
  if (n.status == MemberStatus::paused) return;  // stays due; fires at resume
  fire_tick(e.node, e.channel);
}

void Cluster::fire_tick(uint32_t m, uint8_t channel) {
  Node& n = nodes_[m];
  n.wake.ch[channel].at = kNever;
  gossip::Effects& out = scratch();
  if (channel == 0) {
    n.swim->on_tick(now(), out);
  } else {
    n.layers[channel - 1]->on_tick(now(), out);
  }
  perform(m, channel, out);
  release_scratch();
}

uint32_t Cluster::store(std::vector<std::byte>&& bytes) {
  if (!free_buffers_.empty()) {
    const uint32_t slot = free_buffers_.back();
    free_buffers_.pop_back();
    buffers_[slot] = std::move(bytes);
    return slot;
  }
  buffers_.push_back(std::move(bytes));
  return static_cast<uint32_t>(buffers_.size() - 1);
}

void Cluster::release(uint32_t slot) {
  std::vector<std::byte>().swap(buffers_[slot]);
  free_buffers_.push_back(slot);
}

uint32_t Cluster::open_stream(uint32_t m, uint8_t channel, uint64_t token) {
  uint32_t rec;
  if (!free_streams_.empty()) {
    rec = free_streams_.back();
    free_streams_.pop_back();
  } else {
    rec = static_cast<uint32_t>(streams_.size());
    streams_.emplace_back();
  }
  StreamRecord& r = streams_[rec];
  const uint32_t seq = r.seq;
  r = StreamRecord{};
  r.seq = seq;
  r.requester = m;
  r.life = nodes_[m].life;
  r.channel = channel;
  r.open = true;
  r.token = token;
  r.in_use = true;
  return rec;
}

Cluster::StreamRecord* Cluster::stream_of(uint64_t aux) {
  const auto rec = static_cast<uint32_t>(aux >> 32);
  if (rec >= streams_.size()) return nullptr;
  StreamRecord& r = streams_[rec];
  return (r.in_use && r.seq == static_cast<uint32_t>(aux)) ? &r : nullptr;
}

// A record is reused only once it is answered, its deadline has passed and no inbox names it.
void Cluster::maybe_free_stream(uint64_t aux) {
  StreamRecord* r = stream_of(aux);
  if (r == nullptr || r->open || !r->deadline_passed || r->pending_refs > 0) return;
  r->in_use = false;
  ++r->seq;
  free_streams_.push_back(static_cast<uint32_t>(aux >> 32));
}

}  // namespace shoal::sim
