// Conversions between views/ballots and their Protobuf messages, and the validating decoders for
// view-agreement requests and responses (untrusted bytes from the network).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "membership.pb.h"
#include "membership/ballot.hpp"
#include "membership/view.hpp"
#include "wire/reject.hpp"

namespace shoal::membership {

// The most bytes a view-agreement frame may carry (a 10,000-member view is about 600 KB).
inline constexpr size_t kMaxViewFrameBytes = 16u << 20;

void to_msg(const View& v, wire::ViewMsg* out);
// Rebuilds and validates a view; refuses one whose recomputed hash differs from the carried one.
Result<View> from_msg(const wire::ViewMsg& msg);

void to_msg(const Ballot& b, wire::BallotMsg* out);
Ballot from_msg(const wire::BallotMsg& msg);

std::vector<std::byte> encode(const google::protobuf::MessageLite& msg);
Result<wire::ViewRequest, wire::DecodeError> decode_request(std::span<const std::byte> bytes);
Result<wire::ViewResponse, wire::DecodeError> decode_response(std::span<const std::byte> bytes);

}  // namespace shoal::membership
