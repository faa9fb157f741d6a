// Encoding and validation of the typed hello that opens each TCP connection.
#include "net/stream_hello.hpp"

#include "wire/packet.hpp"

namespace shoal::net {

std::vector<std::byte> encode_hello(const wire::Envelope& sender, wire::Hello::Channel channel) {
  wire::Envelope env = sender;
  env.mutable_hello()->set_channel(channel);
  auto bytes = wire::encode_packet(env, kMaxHelloBytes);
  // The sender fields are ours and short; a hello that does not fit is a programming error.
  return bytes ? std::move(*bytes) : std::vector<std::byte>{};
}

Result<PeerHello, wire::DecodeError> decode_hello(std::span<const std::byte> payload,
                                                  const std::string& expected_cluster) {
  wire::PacketLimits limits;
  limits.max_bytes = kMaxHelloBytes;
  limits.expected_cluster = expected_cluster;
  auto env = wire::decode_packet(payload, limits);
  if (!env) return Unexpected<wire::DecodeError>{env.error()};
  if (env->body_case() != wire::Envelope::kHello) {
    return Unexpected<wire::DecodeError>{{wire::RejectCause::malformed, "first frame is not a hello"}};
  }
  const auto channel = env->hello().channel();
  if (channel == wire::Hello::CHANNEL_UNSPECIFIED || !wire::Hello::Channel_IsValid(channel)) {
    return Unexpected<wire::DecodeError>{{wire::RejectCause::malformed, "unknown channel " + std::to_string(channel)}};
  }
  PeerHello out;
  out.channel = channel;
  out.name = env->sender().name();
  out.generation = env->sender().generation();
  out.addr = env->sender_addr();
  return out;
}

}  // namespace shoal::net
