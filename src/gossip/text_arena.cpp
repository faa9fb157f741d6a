// The member table's byte arena.
#include "gossip/text_arena.hpp"

#include <algorithm>
#include <cstring>

namespace shoal::gossip {

const char* TextArena::store(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (std::string_view p : parts) size += p.size();
  char* at = nullptr;
  if (size > kChunkBytes / 4) {
    large_.push_back(std::make_unique<char[]>(size));
    at = large_.back().get();
  } else {
    if (size > free_in_last_ || next_ == nullptr) {
      // Chunks double from 4 KiB to 64 KiB: a small table (most agents' tests) takes little, and the
      // tables of a simulated cluster of thousands waste at most one partly used chunk each.
      const size_t bytes = std::max(size, std::min(kChunkBytes, kFirstChunkBytes << std::min<size_t>(chunks_.size(), 8)));
      chunks_.push_back(std::make_unique<char[]>(bytes));
      next_ = chunks_.back().get();
      free_in_last_ = bytes;
    }
    at = next_;
    next_ += size;
    free_in_last_ -= size;
  }
  char* w = at;
  for (std::string_view p : parts) {
    if (!p.empty()) std::memcpy(w, p.data(), p.size());
    w += p.size();
  }
  used_ += size;
  return at;
}

}  // namespace shoal::gossip
