// Encoding and validating decoding of UDP packets (header + Envelope).
#include "wire/packet.hpp"

#include <cstring>

namespace shoal::wire {
namespace {

constexpr std::byte kMagic[3] = {std::byte{'S'}, std::byte{'H'}, std::byte{'L'}};
constexpr std::byte kHeaderVersion{1};

uint32_t read_be32(const std::byte* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

void write_be32(std::byte* p, uint32_t v) {
  p[0] = std::byte(v >> 24);
  p[1] = std::byte(v >> 16);
  p[2] = std::byte(v >> 8);
  p[3] = std::byte(v);
}

DecodeError rejected(RejectCause cause, std::string detail) { return DecodeError{cause, std::move(detail)}; }

}  // namespace

Result<std::vector<std::byte>> encode_packet(const Envelope& env, size_t max_bytes) {
  const size_t body = env.ByteSizeLong();
  const size_t total = kPacketHeaderBytes + body;
  if (total > max_bytes) {
    return fail("packet of " + std::to_string(total) + " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  std::vector<std::byte> out(total);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  out[3] = kHeaderVersion;
  write_be32(out.data() + 4, static_cast<uint32_t>(body));
  if (!env.SerializeToArray(out.data() + kPacketHeaderBytes, static_cast<int>(body))) {
    return fail("envelope did not serialize");
  }
  return out;
}

std::optional<DecodeError> decode_packet_into(std::span<const std::byte> bytes, const PacketLimits& limits,
                                              Envelope& env) {
  if (bytes.size() > limits.max_bytes) {
    return rejected(RejectCause::oversized, std::to_string(bytes.size()) + " bytes > " + std::to_string(limits.max_bytes));
  }
  if (bytes.size() < 3 || std::memcmp(bytes.data(), kMagic, 3) != 0) {
    return rejected(RejectCause::bad_magic, "missing magic");
  }
  if (bytes.size() < kPacketHeaderBytes) return rejected(RejectCause::truncated, "header cut short");
  if (bytes[3] != kHeaderVersion) {
    return rejected(RejectCause::bad_version, "header version " + std::to_string(int(bytes[3])));
  }
  const uint32_t body = read_be32(bytes.data() + 4);
  const size_t have = bytes.size() - kPacketHeaderBytes;
  if (have < body) {
    return rejected(RejectCause::truncated, "payload " + std::to_string(have) + " of " + std::to_string(body) + " bytes");
  }
  if (have > body) return rejected(RejectCause::malformed, std::to_string(have - body) + " trailing bytes");

  if (!env.ParseFromArray(bytes.data() + kPacketHeaderBytes, static_cast<int>(body))) {
    return rejected(RejectCause::malformed, "envelope does not parse");
  }
  if (env.protocol_version() != kProtocolVersion) {
    return rejected(RejectCause::bad_version, "protocol version " + std::to_string(env.protocol_version()));
  }
  if (!env.has_sender() || env.sender().name().empty() || env.sender().generation() == 0) {
    return rejected(RejectCause::malformed, "sender identity missing");
  }
  if (env.body_case() == Envelope::BODY_NOT_SET) return rejected(RejectCause::malformed, "no body");
  if (!limits.expected_cluster.empty() && env.cluster_id() != limits.expected_cluster) {
    return rejected(RejectCause::wrong_cluster, "cluster '" + env.cluster_id() + "'");
  }
  return std::nullopt;
}

Result<Envelope, DecodeError> decode_packet(std::span<const std::byte> bytes, const PacketLimits& limits) {
  Envelope env;
  if (auto e = decode_packet_into(bytes, limits, env)) return Unexpected<DecodeError>{std::move(*e)};
  return env;
}

Envelope make_envelope(const std::string& cluster_id, const std::string& name, uint64_t generation,
                       const std::string& addr) {
  Envelope env;
  env.set_cluster_id(cluster_id);
  env.set_protocol_version(kProtocolVersion);
  env.mutable_sender()->set_name(name);
  env.mutable_sender()->set_generation(generation);
  env.set_sender_addr(addr);
  return env;
}

}  // namespace shoal::wire
