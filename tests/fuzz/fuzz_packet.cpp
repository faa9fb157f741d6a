// Fuzz target: the UDP packet decoder (8-byte header + Envelope), as every receiver calls it: with the
// default limits and any cluster, and with the cluster id it expects.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "wire/packet.hpp"

namespace {

// The cluster id the seeds of make_corpus.cpp carry.
constexpr const char* kCluster = "fuzz-cluster";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::wire;
  const auto bytes = std::as_bytes(std::span(data, size));

  const PacketLimits any_cluster;
  PacketLimits our_cluster;
  our_cluster.expected_cluster = kCluster;
  auto any = decode_packet(bytes, any_cluster);
  auto ours = decode_packet(bytes, our_cluster);

  // Expecting a cluster only ever refuses more, and only as wrong_cluster.
  if (ours && !any) __builtin_trap();
  if (any && !ours && (ours.error().cause != RejectCause::wrong_cluster || any->cluster_id() == kCluster)) {
    __builtin_trap();
  }
  if (!any) return 0;

  // An accepted envelope encodes again to a packet that decodes to the same message. (Unlimited size:
  // the encoding of a parsed message need not be byte-for-byte the datagram it came from.)
  constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();
  auto again = encode_packet(*any, kUnlimited);
  if (!again) __builtin_trap();
  PacketLimits unlimited;
  unlimited.max_bytes = kUnlimited;
  auto back = decode_packet(*again, unlimited);
  if (!back || back->SerializeAsString() != any->SerializeAsString()) __builtin_trap();
  return 0;
}
