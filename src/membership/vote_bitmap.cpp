// Vote bitmaps (vote_bitmap.hpp): bits per member, merged by segment, counted as they arrive.
#include "membership/vote_bitmap.hpp"

#include <algorithm>
#include <bit>

#include "membership/view.hpp"

namespace shoal::membership {

size_t fast_quorum(size_t n) { return (3 * n + 3) / 4; }

size_t classic_quorum(size_t n) { return n / 2 + 1; }

VoteBitmap::VoteBitmap(size_t members)
    : members_(std::min(members, kMaxViewMembers)), words_((members_ + 63) / 64, 0) {}

size_t VoteBitmap::segment_size(size_t segment) const {
  if (segment >= segments()) return 0;
  const size_t first = segment * kVoteSegmentBits;
  const size_t bits = std::min(kVoteSegmentBits, members_ - first);
  return (bits + 7) / 8;
}

bool VoteBitmap::has(size_t index) const { return index < members_ && (words_[index / 64] >> (index % 64) & 1U) != 0; }

bool VoteBitmap::set(size_t index) {
  if (index >= members_ || has(index)) return false;
  words_[index / 64] |= uint64_t{1} << (index % 64);
  ++count_;
  return true;
}

Result<size_t> VoteBitmap::merge_segment(size_t segment, std::span<const std::byte> bytes) {
  if (segment >= segments()) {
    return fail("vote segment " + std::to_string(segment) + " is past a view of " + std::to_string(members_) +
                " members");
  }
  const size_t want = segment_size(segment);
  if (bytes.size() != want) {
    return fail("vote segment " + std::to_string(segment) + " has " + std::to_string(bytes.size()) + " bytes, not " +
                std::to_string(want));
  }
  const size_t first = segment * kVoteSegmentBits;
  const size_t bits = std::min(kVoteSegmentBits, members_ - first);
  if (bits % 8 != 0) {
    const auto last = static_cast<unsigned>(bytes.back());
    if ((last >> (bits % 8)) != 0) {
      return fail("vote segment " + std::to_string(segment) + " sets a bit past the view's last member");
    }
  }
  // Segments start on a word boundary (1024 bits = 16 words): assemble each word from its bytes.
  size_t added = 0;
  for (size_t byte = 0; byte < bytes.size(); byte += 8) {
    uint64_t word = 0;
    for (size_t k = 0; k < 8 && byte + k < bytes.size(); ++k) {
      word |= uint64_t{static_cast<unsigned char>(bytes[byte + k])} << (8 * k);
    }
    uint64_t& mine = words_[(first + byte * 8) / 64];
    added += static_cast<size_t>(std::popcount(word & ~mine));
    mine |= word;
  }
  count_ += added;
  return added;
}

std::vector<std::byte> VoteBitmap::segment_bytes(size_t segment) const {
  const size_t size = segment_size(segment);
  std::vector<std::byte> out(size);
  const size_t first_word = segment * kVoteSegmentBits / 64;
  for (size_t byte = 0; byte < size; ++byte) {
    out[byte] = static_cast<std::byte>((words_[first_word + byte / 8] >> (8 * (byte % 8))) & 0xff);
  }
  return out;
}

}  // namespace shoal::membership
