// The opening of every shoal TCP connection: frame types, and the typed hello (an Envelope with a
// Hello body, encoded like a UDP packet) that says which channel the connection is for.
//   client: [hello frame][request frame]    server: [response frame], then close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "envelope.pb.h"
#include "wire/reject.hpp"

namespace shoal::agent {

enum class FrameType : uint8_t { hello = 1, request = 2, response = 3 };

// A hello is small; anything bigger is refused before it is buffered.
inline constexpr size_t kMaxHelloBytes = 1024;

struct PeerHello {
  wire::Hello::Channel channel = wire::Hello::CHANNEL_UNSPECIFIED;
  std::string name;
  uint64_t generation = 0;
  std::string addr;  // the address the peer advertises (its UDP and TCP port)
};

// The payload of a hello frame for `channel`, from the sender identified by `sender`.
std::vector<std::byte> encode_hello(const wire::Envelope& sender, wire::Hello::Channel channel);

// Validates a hello frame's payload: header, protocol version, cluster id (when `expected_cluster` is
// not empty), a known channel.
Result<PeerHello, wire::DecodeError> decode_hello(std::span<const std::byte> payload,
                                                  const std::string& expected_cluster);

}  // namespace shoal::agent
