// Fuzz target: the view-agreement decoders (decode_request, decode_response) and the view rebuilt from
// a message (from_msg). Random members rarely carry the right hash, so each carried view is also
// tried with its hash recomputed, which reaches the accepting path and its round trip.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "membership/view_codec.hpp"

namespace {

using namespace shoal;

// A view that decodes converts back to the same message content and view.
void check_round_trip(const membership::View& v) {
  wire::ViewMsg msg;
  membership::to_msg(v, &msg);
  auto again = membership::from_msg(msg);
  if (!again || !(*again == v) || again->hash() != v.hash()) __builtin_trap();
  for (const auto& m : v.members()) {
    if (v.find(m.name) == nullptr || !v.index_of(m.name)) __builtin_trap();
  }
  (void)v.total_slots();
  (void)v.to_string();
}

void check_view(const wire::ViewMsg& msg) {
  if (auto v = membership::from_msg(msg)) check_round_trip(*v);
  // The same members with the hash they should carry: from_msg accepts exactly when View::make does.
  std::vector<membership::ViewMember> members;
  for (const auto& mm : msg.members()) {
    members.push_back({mm.name(), mm.host(), mm.addr(), mm.slots(), mm.join_epoch(), mm.generation()});
  }
  std::vector<std::string> evicted(msg.evicted().begin(), msg.evicted().end());
  bool bounded = msg.evicted_size() <= 16;  // what from_msg bounds beyond View::make
  for (const auto& name : evicted) bounded = bounded && name.size() <= membership::kMaxViewTextBytes;
  std::vector<std::string> excluded(msg.excluded().begin(), msg.excluded().end());
  bounded = bounded && excluded.size() <= membership::kMaxViewExcluded;
  for (const auto& name : excluded) bounded = bounded && name.size() <= membership::kMaxViewTextBytes;
  auto made =
      membership::View::make(msg.epoch(), std::move(members), msg.lineage(), std::move(evicted), std::move(excluded));
  wire::ViewMsg fixed = msg;
  fixed.set_hash(made ? made->hash() : msg.hash());
  auto v = membership::from_msg(fixed);
  if (made && bounded && !v) __builtin_trap();
  if (v) check_round_trip(*v);
}

template <class Msg, class Decode>
void check_reencode(const Msg& msg, Decode decode) {
  auto again = decode(membership::encode(msg));
  if (!again || again->SerializeAsString() != msg.SerializeAsString()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));

  if (auto req = membership::decode_request(bytes)) {
    (void)membership::from_msg(req->ballot());
    if (req->has_accept()) check_view(req->accept().view());
    if (req->has_commit() && req->commit().has_view()) check_view(req->commit().view());
    check_reencode(*req, [](std::span<const std::byte> b) { return membership::decode_request(b); });
  }
  if (auto resp = membership::decode_response(bytes)) {
    (void)membership::from_msg(resp->promised());
    (void)membership::from_msg(resp->accepted_ballot());
    if (resp->has_accepted()) check_view(resp->accepted());
    if (resp->has_committed()) check_view(resp->committed());
    check_reencode(*resp, [](std::span<const std::byte> b) { return membership::decode_response(b); });
  }
  return 0;
}
