// Open-addressing name index with backward-shift deletion (no tombstones).
#include "gossip/name_index.hpp"

namespace shoal::gossip {

uint64_t NameIndex::hash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, then a finaliser so both halves are well mixed
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

size_t NameIndex::locate(std::string_view name, uint32_t position) const {
  const uint64_t want = slot(hash(name), position);
  for (size_t i = home(want);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i] == want) return i;
  }
}

void NameIndex::insert(std::string_view name, uint32_t position) {
  if ((size_ + 1) * 4 > slots_.size() * 3) grow();  // at most 3/4 full: 11-22 bytes per name
  const uint64_t h = hash(name);
  size_t i = home(h);
  while (slots_[i] != 0) i = (i + 1) & (slots_.size() - 1);
  slots_[i] = slot(h, position);
  ++size_;
}

void NameIndex::erase(std::string_view name, uint32_t position) {
  const size_t mask = slots_.size() - 1;
  size_t hole = locate(name, position);
  slots_[hole] = 0;
  --size_;
  // Backward shift: move later entries of the run into the hole when that keeps them reachable
  // from their home slot, so lookups never need tombstones.
  for (size_t i = (hole + 1) & mask; slots_[i] != 0; i = (i + 1) & mask) {
    const size_t h = home(slots_[i]);
    // The entry may move to `hole` unless its home lies cyclically in (hole, i].
    const bool home_between = hole <= i ? (h > hole && h <= i) : (h > hole || h <= i);
    if (!home_between) {
      slots_[hole] = slots_[i];
      slots_[i] = 0;
      hole = i;
    }
  }
}

void NameIndex::move(std::string_view name, uint32_t from, uint32_t to) {
  slots_[locate(name, from)] = slot(hash(name), to);
}

void NameIndex::reserve(size_t names) {
  while (names * 4 > slots_.size() * 3) grow();
}

void NameIndex::grow() {
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(old.empty() ? 16 : old.size() * 2, 0);
  for (uint64_t s : old) {
    if (s == 0) continue;
    size_t i = home(s);
    while (slots_[i] != 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

}  // namespace shoal::gossip
