// The harness's event loop and the members' lifecycle: start, crash, restart, pause and resume, leave.
#include "cluster.hpp"

#include "addresses.hpp"
#include "core_prefetch.hpp"
#include "rng.hpp"

namespace shoal::sim {

const char* to_string(MemberStatus s) {
  switch (s) {
    case MemberStatus::idle:
      return "idle";
    case MemberStatus::running:
      return "running";
    case MemberStatus::paused:
      return "paused";
    case MemberStatus::crashed:
      return "crashed";
    case MemberStatus::left:
      return "left";
  }
  return "unknown";
}

Cluster::Cluster(ClusterOptions opts)
    : opts_(std::move(opts)),
      network_(0, opts_.link, derive_seed(opts_.seed, 0x6e6574)),
      ledger_(opts_.members, opts_.max_tracked_observers),
      checker_(ledger_, opts_.revival) {
  if (opts_.gossip.cluster_id.empty()) opts_.gossip.cluster_id = "sim";
  trace_.mix(opts_.seed);
  for (size_t i = 0; i < opts_.members; ++i) add_member();
  if (opts_.audit_interval > Time(0)) {
    at(opts_.audit_interval, [this] { audit(); });
  }
}

Cluster::~Cluster() = default;

uint32_t Cluster::add_member() {
  const auto m = static_cast<uint32_t>(nodes_.size());
  if (m >= kMaxMembers) {
    checker_.fail("more members than the simulated address space holds", now());
    return m - 1;
  }
  Node& n = nodes_.emplace_back();
  n.name = member_name(m);
  n.addr = member_addr(m);
  network_.resize(nodes_.size());
  ledger_.resize(nodes_.size());
  return m;
}

void Cluster::start(uint32_t m, Time at) {
  Event e;
  e.at = at;
  e.kind = EventKind::start;
  e.node = m;
  queue_.push(e);
}

void Cluster::start_all(Time at) {
  for (uint32_t m = 0; m < nodes_.size(); ++m) start(m, at);
}

void Cluster::crash(uint32_t m) {
  const MemberStatus s = nodes_[m].status;
  if (s == MemberStatus::running || s == MemberStatus::paused) stop(m, MemberStatus::crashed);
}

void Cluster::hint(uint32_t m, uint32_t subject) {
  Node& n = nodes_[m];
  if (n.status != MemberStatus::running) return;
  const auto known = n.swim->find(nodes_[subject].name);
  gossip::Effects& out = scratch();
  n.swim->hint_failed(nodes_[subject].name, known ? known->id.generation : 0, now(), out);
  perform(m, 0, out);
  release_scratch();
}

void Cluster::power_off(uint32_t m) {
  crash(m);
  if (nodes_[m].status == MemberStatus::crashed) nodes_[m].silent = true;
}

void Cluster::restart(uint32_t m) {
  crash(m);
  on_start(m);
}

void Cluster::pause(uint32_t m, Time duration) {
  Node& n = nodes_[m];
  if (n.status != MemberStatus::running && n.status != MemberStatus::paused) return;
  const bool was_running = n.status == MemberStatus::running;
  n.paused_until = std::max(n.paused_until, now() + duration);
  n.status = MemberStatus::paused;
  Event e;
  e.at = n.paused_until;
  e.kind = EventKind::resume;
  e.node = m;
  e.life = n.life;
  e.aux = ++n.pause_seq;
  queue_.push(e);
  if (was_running) notify_status(m);
}

void Cluster::leave(uint32_t m) {
  Node& n = nodes_[m];
  if (n.status != MemberStatus::running) return;  // a frozen or dead process cannot say goodbye
  gossip::Effects& out = scratch();
  n.swim->leave(now(), out);
  perform(m, 0, out);
  release_scratch();
  ledger_.set_subject(m, n.generation, false);
  const uint32_t life = n.life;
  at(now() + opts_.leave_linger, [this, m, life] {
    if (nodes_[m].life == life) stop(m, MemberStatus::left);
  });
}

void Cluster::at(Time t, std::function<void()> action) {
  uint32_t slot;
  if (!free_actions_.empty()) {
    slot = free_actions_.back();
    free_actions_.pop_back();
    actions_[slot] = std::move(action);
  } else {
    slot = static_cast<uint32_t>(actions_.size());
    actions_.push_back(std::move(action));
  }
  Event e;
  e.at = t;
  e.kind = EventKind::action;
  e.slot = slot;
  queue_.push(e);
}

void Cluster::run_until(Time t) {
  while (ok() && !queue_.empty() && queue_.next_time() <= t) step();
  if (ok()) queue_.advance_to(t);
}

bool Cluster::run_until(Time deadline, Time poll, const std::function<bool()>& done) {
  while (ok()) {
    if (done()) return true;
    if (now() >= deadline) return false;
    run_until(std::min(now() + poll, deadline));
  }
  return false;
}

void Cluster::step() {
  const Event e = queue_.pop();
  ++events_processed_;
  prefetch_ahead();
  switch (e.kind) {
    case EventKind::start:
      if (nodes_[e.node].status != MemberStatus::running && nodes_[e.node].status != MemberStatus::paused) {
        on_start(e.node);
      }
      break;
    case EventKind::packet:
    case EventKind::stream_request:
    case EventKind::stream_response:
      arrive(e);
      break;
    case EventKind::stream_deadline:
      on_stream_deadline(e);
      break;
    case EventKind::tick:
      on_tick(e);
      break;
    case EventKind::resume:
      if (nodes_[e.node].life == e.life && nodes_[e.node].pause_seq == e.aux) on_resume(e.node);
      break;
    case EventKind::action: {
      auto action = std::move(actions_[e.slot]);
      actions_[e.slot] = nullptr;
      free_actions_.push_back(e.slot);
      action();
      break;
    }
  }
  // In-flight datagrams and timers scale with the members; anything far beyond is a runaway.
  checker_.check_bound("the event queue", queue_.size(), 256 * nodes_.size() + 100000, now());
}

void Cluster::prefetch_ahead() const {
  // Each step reads what the step one event earlier loaded: the node, then its core object, then
  // the core's fields, its index slot of the sender, the sender's record and text.
  constexpr size_t d = EventQueue::kAhead;
  auto core_event = [this](const Event* e) {
    return e != nullptr && (e->kind == EventKind::packet || e->kind == EventKind::tick) && e->channel == 0 &&
           e->node < nodes_.size();
  };
  if (const Event* e = queue_.ahead(d - 1); core_event(e)) {
    __builtin_prefetch(&nodes_[e->node]);
    if (e->kind == EventKind::packet) {
      __builtin_prefetch(&nodes_[e->from].name);
      __builtin_prefetch(&buffers_[e->slot]);
    }
  }
  if (const Event* e = queue_.ahead(d - 2); core_event(e)) {
    if (nodes_[e->node].swim) __builtin_prefetch(nodes_[e->node].swim.get());
    if (e->kind == EventKind::packet) __builtin_prefetch(buffers_[e->slot].data());
  }
  for (int step = 0; step < 4; ++step) {
    const Event* e = queue_.ahead(d - 3 - static_cast<size_t>(step));
    if (!core_event(e) || !nodes_[e->node].swim) continue;
    prefetch_core(*nodes_[e->node].swim, step,
                  e->kind == EventKind::packet ? std::string_view(nodes_[e->from].name) : std::string_view());
  }
}

void Cluster::on_start(uint32_t m) {
  Node& n = nodes_[m];
  n.silent = false;
  ++n.life;
  ++n.generation;
  gossip::Identity id{n.name, n.generation, n.addr};
  gossip::MemberMeta meta{n.name, 8, {}};
  const uint64_t seed = derive_seed(opts_.seed, (uint64_t(m) << 24) | n.generation);
  n.swim = std::make_unique<gossip::Swim>(opts_.gossip, id, meta, seed);
  if (opts_.layers) n.layers = opts_.layers(m, id, derive_seed(seed, 1));
  if (1 + n.layers.size() > kMaxChannels) {
    checker_.fail("member " + n.name + " has " + std::to_string(n.layers.size()) + " layers; the harness runs at most " +
                      std::to_string(kMaxChannels - 1),
                  now());
    n.layers.resize(kMaxChannels - 1);
  }
  n.wake.assign(1 + n.layers.size(), kNever);
  n.status = MemberStatus::running;
  n.paused_until = Time(0);
  n.open_streams = 0;
  n.streams_in_flight.assign(1 + n.layers.size(), 0);
  n.waiting_streams.assign(1 + n.layers.size(), {});
  ledger_.reset_observer(m);
  ledger_.set_subject(m, n.generation, true);
  trace_.mix(uint64_t(now().count()));
  trace_.mix((uint64_t(m) << 8) | 1);
  notify_status(m);

  std::vector<std::string> seeds;
  for (uint32_t s = 0; s < opts_.seed_count && s < nodes_.size(); ++s) {
    if (s != m) seeds.push_back(nodes_[s].addr);
  }
  if (opts_.warm_start && roster_.empty()) {
    roster_.reserve(nodes_.size());
    for (const Node& other : nodes_) {
      roster_.push_back(gossip::Member{{other.name, 1, other.addr}, gossip::State::alive, 0, {other.name, 8, {}}, now()});
    }
  }
  const bool warm = opts_.warm_start && n.generation == 1;
  gossip::Effects& out = scratch();
  n.swim->start(seeds, warm ? std::span<const gossip::Member>(roster_) : std::span<const gossip::Member>(), now(), out);
  perform(m, 0, out);
  release_scratch();
  for (size_t i = 0; i < nodes_[m].layers.size(); ++i) {
    gossip::Effects& lout = scratch();
    nodes_[m].layers[i]->on_start(now(), lout);
    perform(m, static_cast<uint8_t>(i + 1), lout);
    release_scratch();
  }
}

void Cluster::stop(uint32_t m, MemberStatus why) {
  Node& n = nodes_[m];
  ++n.life;
  n.status = why;
  n.swim.reset();
  n.layers.clear();
  n.wake.clear();
  n.open_streams = 0;
  drop_waiting_streams(n);
  for (const InboxItem& item : n.inbox) {
    if (has_buffer(item.slot)) release(item.slot);
    if (item.kind == EventKind::stream_response) {
      if (StreamRecord* rec = stream_of(item.aux)) --rec->pending_refs;
      maybe_free_stream(item.aux);
    }
  }
  n.inbox.clear();
  n.inbox_bytes = 0;
  ledger_.set_subject(m, n.generation, false);
  trace_.mix(uint64_t(now().count()));
  trace_.mix((uint64_t(m) << 8) | 2);
  notify_status(m);
}

void Cluster::on_resume(uint32_t m) {
  nodes_[m].status = MemberStatus::running;
  trace_.mix(uint64_t(now().count()));
  trace_.mix((uint64_t(m) << 8) | 3);
  notify_status(m);
  // What arrived while frozen is read first, then the timers that expired meanwhile fire.
  while (!nodes_[m].inbox.empty() && ok()) {
    const InboxItem item = nodes_[m].inbox.front();
    nodes_[m].inbox.pop_front();
    if (item.kind == EventKind::packet) nodes_[m].inbox_bytes -= buffers_[item.slot].size();
    if (item.kind == EventKind::stream_response) {
      if (StreamRecord* rec = stream_of(item.aux)) --rec->pending_refs;
    }
    deliver(m, item.kind, item.channel, item.from, item.slot, item.aux);
  }
  for (uint8_t c = 0; c < nodes_[m].wake.size(); ++c) {
    if (nodes_[m].wake.ch[c].at <= now()) fire_tick(m, c);
  }
}

void Cluster::audit() {
  for (uint32_t o = 0; o < nodes_.size() && ok(); ++o) {
    const Node& n = nodes_[o];
    if (!n.swim || !ledger_.tracked(o)) continue;
    for (const gossip::Member& mem : n.swim->members()) {
      const auto subject = index_of_name(mem.id.name);
      if (!subject || *subject >= nodes_.size()) {
        checker_.fail("observer " + n.name + " lists an unknown member '" + mem.id.name + "'", now());
        return;
      }
      if (*subject != o) {
        // The member list and the events announced must tell the same story.
        const SeenRecord* seen = ledger_.get(o, *subject);
        if (seen->generation == 0 || (seen->generation == mem.id.generation && seen->state != mem.state)) {
          checker_.fail("observer " + n.name + " lists " + mem.id.name + " as " + gossip::to_string(mem.state) +
                            " (generation " + std::to_string(mem.id.generation) + ") but announced " +
                            (seen->generation == 0 ? std::string("nothing about it")
                                                   : std::string(gossip::to_string(seen->state))),
                        now());
          return;
        }
      }
      if (!checker_.observe(o, *subject, mem, now(), "audit")) return;
    }
  }
  at(now() + opts_.audit_interval, [this] { audit(); });
}

void Cluster::notify_status(uint32_t m) {
  for (ClusterObserver* o : observers_) o->on_status(m, nodes_[m].status, now());
}

gossip::Effects& Cluster::scratch() {
  if (scratch_depth_ == scratch_.size()) scratch_.push_back(std::make_unique<gossip::Effects>());
  gossip::Effects& out = *scratch_[scratch_depth_++];
  out.clear();
  return out;
}

void Cluster::release_scratch() { --scratch_depth_; }

}  // namespace shoal::sim
