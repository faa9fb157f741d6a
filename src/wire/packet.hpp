// The UDP packet: a fixed 8-byte header (magic "SHL", header version, payload length) and a Protobuf
// Envelope. Decoding never trusts the bytes: every failure is a DecodeError with a cause, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "envelope.pb.h"
#include "wire/reject.hpp"

namespace shoal::wire {

inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr size_t kPacketHeaderBytes = 8;
// Datacenter MTU 1500 minus IP/UDP headers leaves room for 1400 bytes of payload with margin.
inline constexpr size_t kMaxPacketBytes = 1400;

struct PacketLimits {
  size_t max_bytes = kMaxPacketBytes;
  std::string expected_cluster;  // empty: accept any cluster id
};

// Serializes an envelope with its header. Fails if the result would exceed max_bytes.
Result<std::vector<std::byte>> encode_packet(const Envelope& env, size_t max_bytes = kMaxPacketBytes);

// Parses and validates a received datagram.
Result<Envelope, DecodeError> decode_packet(std::span<const std::byte> bytes, const PacketLimits& limits);
// The same into an envelope the caller keeps: a receiver that reuses one allocates nothing for most
// datagrams (protobuf keeps the capacity of a cleared message's strings). nullopt: `env` is valid.
std::optional<DecodeError> decode_packet_into(std::span<const std::byte> bytes, const PacketLimits& limits,
                                              Envelope& env);

// Fills the fields every envelope carries.
Envelope make_envelope(const std::string& cluster_id, const std::string& name, uint64_t generation,
                       const std::string& addr);

}  // namespace shoal::wire
