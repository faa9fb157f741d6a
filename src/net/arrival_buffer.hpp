// How a buffer for bytes announced by a peer (a frame's body) grows: with what has arrived, never to
// the announced length up front.
#pragma once

#include <algorithm>
#include <cstddef>

namespace shoal::net {

// Why: a peer that announces a frame of the limit's size and then sends nothing (or a few bytes) would
// otherwise make the reader allocate and zero-fill the whole limit per connection; and for a large
// frame that does arrive, the zero-fill is a wasted pass over memory. Doubling keeps the resizes to a
// few (each copies what arrived so far, amortized under one extra pass), starting at 64 KiB so small
// frames, the common case, take one read into one allocation.
inline constexpr size_t kFirstArrivalBytes = 64 * 1024;

// The size to grow a buffer holding `filled` bytes of `announced` to before reading more into it.
inline size_t grow_for_arrival(size_t filled, size_t announced) {
  return std::min(announced, std::max(kFirstArrivalBytes, 2 * filled));
}

}  // namespace shoal::net
