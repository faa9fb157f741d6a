// NetworkModel: what happens to a message between two simulated members: per-link and per-direction
// loss, delay, jitter, duplication and reordering, per-member ingress/egress loss, and partitions
// (symmetric or one-way). It decides fates; the cluster harness carries the bytes.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "event_queue.hpp"
#include "rng.hpp"

namespace shoal::sim {

struct LinkParams {
  double loss = 0;       // probability that a datagram is dropped
  Time delay{100};       // one-way base delay (a datacenter: 0.1 ms)
  Time jitter{150};      // plus uniform [0, jitter]: reorders datagrams that leave close together
  double duplicate = 0;  // probability that a datagram arrives twice
  double reorder = 0;    // probability that a datagram is held back by up to reorder_delay more
  Time reorder_delay{2000};
};

// The fate of one datagram: how many copies arrive (0, 1 or 2) and after what delays.
struct DatagramFate {
  uint8_t copies = 0;
  Time delay[2]{};
};

struct NetworkCounters {
  uint64_t lost = 0;         // dropped by loss (link, ingress or egress)
  uint64_t blocked = 0;      // dropped by a partition
  uint64_t duplicated = 0;   // extra copies delivered
  uint64_t retransmits = 0;  // stream segments lost and sent again
};

class NetworkModel {
 public:
  NetworkModel(size_t members, LinkParams defaults, uint64_t seed);

  void resize(size_t members);
  size_t size() const { return group_.size(); }

  // The parameters of every link without its own.
  LinkParams& defaults() { return defaults_; }
  const LinkParams& defaults() const { return defaults_; }
  // One direction of one link (from -> to) gets its own parameters, or returns to the defaults.
  void set_link(uint32_t from, uint32_t to, LinkParams params);
  void clear_link(uint32_t from, uint32_t to);
  const LinkParams& link(uint32_t from, uint32_t to) const;
  // Loss applied to everything a member receives / sends, on top of the link's (a bad NIC, a full queue).
  void set_member_loss(uint32_t member, double ingress, double egress);

  // Symmetric partition: each listed group can reach only itself; unlisted members form one more group.
  void partition(const std::vector<std::vector<uint32_t>>& groups);
  // Asymmetric partition: datagrams and streams from `from` to `to` are dropped; the reverse passes.
  void block_one_way(std::span<const uint32_t> from, std::span<const uint32_t> to);
  // Every datagram to `member` is dropped while streams reach it (a firewall that drops its UDP port):
  // it learns nothing from gossip, its probes are answered only by the TCP fallback. heal() ends it.
  void deafen(uint32_t member);
  // Removes every partition and deafness (link and member parameters stay).
  void heal();
  bool blocked(uint32_t from, uint32_t to) const {
    return groups_ > 1 && blocked_[group_[from] * groups_ + group_[to]] != 0;
  }

  DatagramFate datagram(uint32_t from, uint32_t to);
  // One-way delay of a stream segment. TCP retransmits a lost segment after its retransmission timeout
  // (Linux: 1 s for SYN and SYN-ACK, at least 200 ms for data, doubling each time), so loss shows up
  // as delay, never as loss. Streams never cross a partition: the caller checks blocked().
  enum class Segment : uint8_t { handshake, data };
  Time stream_delay(uint32_t from, uint32_t to, Segment segment = Segment::data);

  const NetworkCounters& counters() const { return counters_; }

 private:
  Time sample_delay(const LinkParams& p);
  static uint64_t key(uint32_t from, uint32_t to) { return (uint64_t(from) << 32) | to; }

  LinkParams defaults_;
  std::unordered_map<uint64_t, LinkParams> links_;
  std::vector<double> ingress_loss_;
  std::vector<double> egress_loss_;
  std::vector<uint16_t> group_;
  uint16_t groups_ = 1;
  std::vector<uint8_t> blocked_;  // groups_ x groups_, from-major
  std::vector<uint8_t> deaf_;     // per member: datagrams to it are dropped (empty: none is)
  SimRng rng_;
  NetworkCounters counters_;
};

}  // namespace shoal::sim
