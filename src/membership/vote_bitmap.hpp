// Votes of a view's members for one proposal (docs/agreement.md, "bitmap votes"): one bit per member at its
// index in the base view, kept in segments of kVoteSegmentBits members (128 bytes) that gossip carries and
// receivers merge by OR. The count is kept as bits arrive (a merge costs the segment's 16 words), so a
// member knows at once whether a quorum voted. Pure data; a segment from the network is checked whole
// before a bit of it is taken.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/result.hpp"

namespace shoal::membership {

inline constexpr size_t kVoteSegmentBits = 1024;
inline constexpr size_t kVoteSegmentBytes = kVoteSegmentBits / 8;

// The votes a fast decision needs: ceil(3n/4) of the base's n members, so that any classic majority holds
// a majority of the fast voters (Fast Paxos' condition with majority classic quorums).
size_t fast_quorum(size_t n);
// A classic quorum: a majority, floor(n/2) + 1.
size_t classic_quorum(size_t n);

class VoteBitmap {
 public:
  // All members' bits clear; `members` is the base view's size (capped at kMaxViewMembers, as views are).
  explicit VoteBitmap(size_t members);

  size_t members() const { return members_; }
  size_t count() const { return count_; }
  size_t segments() const { return (members_ + kVoteSegmentBits - 1) / kVoteSegmentBits; }
  // The length in bytes segment `segment` has on the wire (the last one covers only the members left).
  size_t segment_size(size_t segment) const;

  bool has(size_t index) const;
  // Sets member `index`'s bit; true if it was not set. An index past the view is refused (false).
  bool set(size_t index);

  // ORs in a segment received from a peer; returns how many votes were new. Refused before anything is
  // changed: a segment index past the view, a length other than segment_size(segment), a bit set past the
  // last member.
  Result<size_t> merge_segment(size_t segment, std::span<const std::byte> bytes);
  // Segment `segment` as it goes on the wire (segment_size(segment) bytes; bit i of byte j is member
  // segment * 1024 + 8j + i).
  std::vector<std::byte> segment_bytes(size_t segment) const;

 private:
  size_t members_;
  size_t count_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace shoal::membership
