// Cluster: the harness that runs N gossip cores (and any layers beside them) in one process on
// virtual time. It performs their effects over the NetworkModel, freezes paused members (their
// datagrams wait in a bounded inbox, like a socket buffer), crashes and restarts them (same name,
// new generation), keeps per-member byte counters, folds everything delivered into the trace hash,
// and checks the invariants after every event. Deterministic: a seed replays the same run.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "event_queue.hpp"
#include "gossip/swim.hpp"
#include "invariant_checker.hpp"
#include "layer.hpp"
#include "network.hpp"
#include "trace_hash.hpp"
#include "view_ledger.hpp"

namespace shoal::sim {

struct ClusterOptions {
  size_t members = 16;
  uint64_t seed = 1;
  gossip::Config gossip;  // cluster_id "sim" when left empty
  LinkParams link;        // every link's parameters until changed through network()
  // A starting member is given the addresses of members 0..seed_count-1 (itself excluded), as every
  // host of a job gets the same short list.
  size_t seed_count = 3;
  // A member's first start hands its core the roster of every member's first life (names,
  // generation 1, addresses, metadata), as a launcher that knows the whole job would: the cluster
  // starts in steady state instead of joining. Only meaningful when all members start at once.
  bool warm_start = false;
  // What a paused member's socket buffer holds before datagrams are dropped (Linux's default rmem).
  size_t inbox_capacity_bytes = 212992;
  // Invariants and convergence are tracked for every observer up to this many members, else for a sample.
  size_t max_tracked_observers = 2048;
  // Every this often, every tracked observer's whole member list is checked as well (0: never).
  Time audit_interval{0};
  // Whether a member shown dead may be shown alive again in the same generation after refuting.
  Revival revival = Revival::never;
  // Stream requests one member has in flight at once on one channel, as the agent's StreamClient (one per
  // core: net::kDefaultMaxInFlight, 128): the excess waits in a FIFO and starts as exchanges finish, each
  // still failing at its own deadline.
  size_t streams_in_flight = 128;
  // Bound on the stream requests one member has open at once (in flight and waiting), checked as an
  // invariant: the agent's queue holds 65,536 (net::kDefaultMaxQueued) beside those in flight.
  size_t max_open_streams = 65536 + 128;
  // How long a member that left keeps running so that its departure gets out.
  Time leave_linger{500000};
  LayerFactory layers;  // none when empty
};

struct MemberCounters {
  uint64_t packets_out = 0, bytes_out = 0;         // datagrams handed to the network (lost ones included)
  uint64_t packets_in = 0, bytes_in = 0;           // datagrams handed to a core
  uint64_t streams_out = 0, stream_bytes_out = 0;  // requests made and responses served
  uint64_t streams_in = 0, stream_bytes_in = 0;    // requests served and responses received
  uint64_t inbox_dropped = 0;                      // datagrams lost to a full inbox while paused
};

class Cluster {
 public:
  explicit Cluster(ClusterOptions opts);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  size_t size() const { return nodes_.size(); }
  Time now() const { return queue_.now(); }
  const ClusterOptions& options() const { return opts_; }

  // A new idle member at the next index (a host that was not there before).
  uint32_t add_member();

  // Member lifecycle. start() schedules; the others act now.
  void start(uint32_t m, Time at);
  void start_all(Time at);
  // The process dies; its host stays up, so connections to its port are refused (an RST) until it
  // starts again: what a killed process looks like, and what gossip's refusal rule reads.
  void crash(uint32_t m);
  // The host goes silent (power loss, a cut link): connections to it time out, nothing is refused.
  void power_off(uint32_t m);
  void restart(uint32_t m);               // crash (if running) and start again: same name, next generation
  void pause(uint32_t m, Time duration);  // frozen: processes nothing, inbound datagrams queue up
  void leave(uint32_t m);                 // graceful leave; stops after leave_linger
  // A trainer beside m saw its connection to `subject` break: m's core gets Swim::hint_failed about the
  // generation it holds of `subject` (nothing when m is not running).
  void hint(uint32_t m, uint32_t subject);
  // Runs `action` at virtual time t (in order with everything else at t).
  void at(Time t, std::function<void()> action);

  // Processes every event up to and including time t, then sets the clock to t. Stops at a violation.
  void run_until(Time t);
  // Runs until done() holds (checked every poll of virtual time) or the deadline; true if done() held.
  bool run_until(Time deadline, Time poll, const std::function<bool()>& done);

  bool ok() const { return checker_.ok(); }
  const std::optional<std::string>& violation() const { return checker_.violation(); }

  MemberStatus status(uint32_t m) const { return nodes_[m].status; }
  uint32_t generation(uint32_t m) const { return nodes_[m].generation; }
  const std::string& addr(uint32_t m) const { return nodes_[m].addr; }
  const MemberCounters& counters(uint32_t m) const { return nodes_[m].counters; }
  gossip::Swim* core(uint32_t m) { return nodes_[m].swim.get(); }  // null unless running or paused
  Layer* layer(uint32_t m, size_t i) { return i < nodes_[m].layers.size() ? nodes_[m].layers[i].get() : nullptr; }
  // Ticks layer i of member m at `at` (or earlier, if a tick is due before): how a test reaches a layer
  // from outside, e.g. an operator's command, with the layer's effects carried out as usual.
  void wake_layer(uint32_t m, size_t i, Time at) { schedule_wake(m, static_cast<uint8_t>(i + 1), at); }

  NetworkModel& network() { return network_; }
  ViewLedger& ledger() { return ledger_; }
  const ViewLedger& ledger() const { return ledger_; }
  InvariantChecker& checker() { return checker_; }
  const TraceHash& trace() const { return trace_; }
  void add_observer(ClusterObserver* o) { observers_.push_back(o); }

  uint64_t events_processed() const { return events_processed_; }
  uint64_t undeliverable() const { return undeliverable_; }

 private:
  struct InboxItem {
    EventKind kind;
    uint8_t channel;
    uint32_t from;
    uint32_t slot;
    uint64_t aux;
  };
  // Per channel of a member: when its core wants its next tick, and when the tick event in the
  // queue (if any) is due. Inline, because every event reads them. The gossip core's latest wake
  // time replaces the previous one; when it moved later, the queued event finds that out when it
  // comes due and is put back at the new time, without calling the core (most probes end with an
  // ack well before their timeout, which would otherwise cost a call per probe).
  static constexpr size_t kMaxChannels = 8;  // the gossip core and up to 7 layers
  struct Tick {
    Time at{0};      // wanted (kNever: none)
    Time queued{0};  // the pending tick event's time (kNever: none)
  };
  struct Wakes {
    std::array<Tick, kMaxChannels> ch{};
    uint8_t count = 0;
    size_t size() const { return count; }
    void assign(size_t n, Time v) {
      count = static_cast<uint8_t>(n);
      ch.fill(Tick{v, v});
    }
    void clear() { count = 0; }
  };
  // What every event reads comes first (one cache line: status, life, the core, the layers and
  // the gossip channel's tick), because at thousands of members each event finds its node cold.
  struct Node {
    MemberStatus status = MemberStatus::idle;
    uint32_t life = 0;        // bumped at every start and stop: timers and answers of an earlier life are stale
    uint32_t generation = 0;  // 1 at the first start
    std::unique_ptr<gossip::Swim> swim;
    std::vector<std::unique_ptr<Layer>> layers;
    Wakes wake;
    MemberCounters counters;
    std::string name, addr;
    Time paused_until{0};
    uint64_t pause_seq = 0;
    std::deque<InboxItem> inbox;
    size_t inbox_bytes = 0;
    size_t open_streams = 0;
    // Per channel: exchanges in flight, and the requests waiting for one (stream refs, oldest first).
    std::vector<size_t> streams_in_flight;
    std::vector<std::deque<uint64_t>> waiting_streams;
    bool silent = false;  // powered off: connection attempts time out instead of being refused
  };
  struct StreamRecord {
    uint32_t requester = 0;
    uint32_t life = 0;
    uint32_t seq = 0;  // bumped when the slot is reused, so late answers to an old request are dropped
    uint8_t channel = 0;
    bool in_use = false;
    bool open = false;  // no answer handed to the requester yet
    bool deadline_passed = false;
    bool launched = false;      // holds one of the requester's in-flight slots (else it waits for one)
    uint32_t pending_refs = 0;  // inbox items (and a waiting queue's entry) that still name this record
    uint64_t token = 0;
    std::string to;                   // while waiting: where it goes
    uint32_t request_slot = UINT32_MAX;  // while waiting: its bytes
  };
  static constexpr Time kNever = Time::max();
  static constexpr uint32_t kNoBuffer = UINT32_MAX;
  // A stream response that is a refused connection (no buffer either).
  static constexpr uint32_t kRefused = UINT32_MAX - 1;
  static bool has_buffer(uint32_t slot) { return slot != kNoBuffer && slot != kRefused; }

  // cluster.cpp: lifecycle and the event loop
  void step();
  // Starts loading what the next few events will read (EventQueue::ahead); changes nothing.
  void prefetch_ahead() const;
  void on_start(uint32_t m);
  void stop(uint32_t m, MemberStatus why);
  void on_resume(uint32_t m);
  void audit();
  void notify_status(uint32_t m);
  gossip::Effects& scratch();
  void release_scratch();

  // cluster_delivery.cpp: carrying effects over the network
  void perform(uint32_t m, uint8_t channel, gossip::Effects& out);
  void send_packet(uint32_t m, uint8_t channel, gossip::SendPacket& p);
  void send_stream(uint32_t m, uint8_t channel, gossip::StreamRequest& r);
  // A request takes an in-flight slot and goes on the network.
  void launch_stream(uint32_t m, uint8_t channel, uint64_t aux, const std::string& to, std::vector<std::byte> bytes);
  // Slots freed on `channel`: the oldest waiting requests start (those already answered are dropped).
  void pump_streams(uint32_t m, uint8_t channel);
  // A stopped member's waiting requests: forgotten.
  void drop_waiting_streams(Node& n);
  void schedule_wake(uint32_t m, uint8_t channel, Time t);  // no later than t
  void set_wake(uint32_t m, uint8_t channel, Time t);       // exactly t (kNever: none)
  void queue_tick(uint32_t m, uint8_t channel, Time t);
  void announce(uint32_t m, std::span<const gossip::MemberEvent> events);
  void arrive(const Event& e);  // a packet, stream request or stream response at a member
  void deliver(uint32_t m, EventKind kind, uint8_t channel, uint32_t from, uint32_t slot, uint64_t aux);
  void deliver_packet(uint32_t m, uint8_t channel, uint32_t from, uint32_t slot);
  void serve_stream(uint32_t m, uint8_t channel, uint32_t from, uint32_t slot, uint64_t aux);
  void answer_stream(uint32_t m, uint32_t slot, uint64_t aux);
  void on_stream_deadline(const Event& e);
  void on_tick(const Event& e);
  void fire_tick(uint32_t m, uint8_t channel);

  uint32_t store(std::vector<std::byte>&& bytes);
  void release(uint32_t slot);
  uint32_t open_stream(uint32_t m, uint8_t channel, uint64_t token);
  StreamRecord* stream_of(uint64_t aux);
  void maybe_free_stream(uint64_t aux);
  static uint64_t stream_ref(uint32_t rec, uint32_t seq) { return (uint64_t(rec) << 32) | seq; }

  ClusterOptions opts_;
  EventQueue queue_;
  NetworkModel network_;
  ViewLedger ledger_;
  InvariantChecker checker_;
  TraceHash trace_;
  std::vector<Node> nodes_;
  std::vector<ClusterObserver*> observers_;
  std::vector<std::function<void()>> actions_;
  std::vector<uint32_t> free_actions_;
  std::vector<std::vector<std::byte>> buffers_;
  std::vector<uint32_t> free_buffers_;
  std::vector<StreamRecord> streams_;
  std::vector<uint32_t> free_streams_;
  std::vector<gossip::Member> roster_;  // warm_start: every member's first life, built at the first start
  std::vector<std::unique_ptr<gossip::Effects>> scratch_;  // one per nesting depth of core calls
  size_t scratch_depth_ = 0;
  uint64_t events_processed_ = 0;
  uint64_t undeliverable_ = 0;
};

}  // namespace shoal::sim
