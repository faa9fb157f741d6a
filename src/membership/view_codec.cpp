// View/ballot <-> Protobuf, and decoding of untrusted view-agreement frames.
#include "membership/view_codec.hpp"

namespace shoal::membership {

void to_msg(const View& v, wire::ViewMsg* out) {
  out->set_epoch(v.epoch());
  out->set_hash(v.hash());
  out->set_lineage(v.lineage());
  out->mutable_members()->Reserve(static_cast<int>(v.size()));
  for (const ViewMember& m : v.members()) {
    auto* mm = out->add_members();
    mm->set_name(m.name);
    mm->set_host(m.host);
    mm->set_addr(m.addr);
    mm->set_slots(m.slots);
    mm->set_join_epoch(m.join_epoch);
    mm->set_generation(m.generation);
  }
  for (const auto& name : v.evicted()) out->add_evicted(name);
  for (const auto& name : v.excluded()) out->add_excluded(name);
}

Result<View> from_msg(const wire::ViewMsg& msg) {
  if (static_cast<size_t>(msg.members_size()) > kMaxViewMembers) {
    return fail("a view of " + std::to_string(msg.members_size()) + " members (at most " +
                std::to_string(kMaxViewMembers) + ")");
  }
  std::vector<ViewMember> members;
  members.reserve(static_cast<size_t>(msg.members_size()));
  for (const auto& mm : msg.members()) {
    if (mm.name().size() > kMaxViewTextBytes || mm.host().size() > kMaxViewTextBytes ||
        mm.addr().size() > kMaxViewTextBytes) {
      return fail("a view member's name, host or address is longer than " + std::to_string(kMaxViewTextBytes) +
                  " bytes");
    }
    members.push_back(ViewMember{mm.name(), mm.host(), mm.addr(), mm.slots(), mm.join_epoch(), mm.generation()});
  }
  // A view removes at most a handful of stragglers (one per eviction window); more is no view of ours.
  if (msg.evicted_size() > 16) return fail("a view that evicts " + std::to_string(msg.evicted_size()) + " members");
  std::vector<std::string> evicted;
  for (const auto& name : msg.evicted()) {
    if (name.size() > kMaxViewTextBytes) {
      return fail("an evicted member's name is longer than " + std::to_string(kMaxViewTextBytes) + " bytes");
    }
    evicted.push_back(name);
  }
  if (static_cast<size_t>(msg.excluded_size()) > kMaxViewExcluded) {
    return fail("a view that excludes " + std::to_string(msg.excluded_size()) + " members (at most " +
                std::to_string(kMaxViewExcluded) + ")");
  }
  std::vector<std::string> excluded;
  excluded.reserve(static_cast<size_t>(msg.excluded_size()));
  for (const auto& name : msg.excluded()) {
    if (name.size() > kMaxViewTextBytes) {
      return fail("an excluded member's name is longer than " + std::to_string(kMaxViewTextBytes) + " bytes");
    }
    excluded.push_back(name);
  }
  auto v = View::make(msg.epoch(), std::move(members), msg.lineage(), std::move(evicted), std::move(excluded));
  if (!v) return fail("view of epoch " + std::to_string(msg.epoch()) + ": " + v.error().message);
  if (v->hash() != msg.hash()) return fail("view of epoch " + std::to_string(msg.epoch()) + ": hash mismatch");
  return v;
}

void to_msg(const Ballot& b, wire::BallotMsg* out) {
  out->set_round(b.round);
  out->set_proposer(b.proposer);
}

Ballot from_msg(const wire::BallotMsg& msg) { return Ballot{msg.round(), msg.proposer()}; }

std::vector<std::byte> encode(const google::protobuf::MessageLite& msg) {
  std::vector<std::byte> out(msg.ByteSizeLong());
  msg.SerializeToArray(out.data(), static_cast<int>(out.size()));
  return out;
}

namespace {
Unexpected<wire::DecodeError> reject(wire::RejectCause c, std::string detail) {
  return Unexpected<wire::DecodeError>{wire::DecodeError{c, std::move(detail)}};
}
}  // namespace

Result<wire::ViewRequest, wire::DecodeError> decode_request(std::span<const std::byte> bytes) {
  if (bytes.size() > kMaxViewFrameBytes) return reject(wire::RejectCause::oversized, "view request too large");
  wire::ViewRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return reject(wire::RejectCause::malformed, "view request does not parse");
  }
  // Epoch 0 only in a joiner's query (it has no view yet); every other request names the epoch it decides.
  if ((req.epoch() == 0 && !req.has_query()) || req.from_name().empty() ||
      req.kind_case() == wire::ViewRequest::KIND_NOT_SET) {
    return reject(wire::RejectCause::malformed, "view request lacks epoch, sender or kind");
  }
  return req;
}

Result<wire::ViewResponse, wire::DecodeError> decode_response(std::span<const std::byte> bytes) {
  if (bytes.size() > kMaxViewFrameBytes) return reject(wire::RejectCause::oversized, "view response too large");
  wire::ViewResponse resp;
  if (!resp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return reject(wire::RejectCause::malformed, "view response does not parse");
  }
  if (resp.verdict() == wire::ViewResponse::VERDICT_UNSPECIFIED) {
    return reject(wire::RejectCause::malformed, "view response without verdict");
  }
  return resp;
}

}  // namespace shoal::membership
