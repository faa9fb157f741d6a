// The member table's name -> position index: open addressing with linear probing over 8-byte
// slots (a 32-bit hash tag and the position), so that a lookup touches one slot run and one
// record, and each record costs 11 to 22 bytes of index (8-byte slots, at most 3/4 full) rather
// than a hash node with its own string.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace shoal::gossip {

class NameIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  static uint64_t hash(std::string_view name);

  // The position of `name`, or kNone; name_at(position) gives the name stored at a position.
  template <class NameAt>
  uint32_t find(std::string_view name, const NameAt& name_at) const {
    if (slots_.empty()) return kNone;
    const uint64_t h = hash(name);
    for (size_t i = home(h);; i = (i + 1) & (slots_.size() - 1)) {
      const uint64_t s = slots_[i];
      if (s == 0) return kNone;
      if ((s >> 32) == (h >> 32) && name_at(position_of(s)) == name) return position_of(s);
    }
  }
  // Makes room for this many names without growing again.
  void reserve(size_t names);
  // Adds a name known to be absent.
  void insert(std::string_view name, uint32_t position);
  // Removes the entry of `name`, which is at `position`.
  void erase(std::string_view name, uint32_t position);
  // The entry of `name` moves from one position to another.
  void move(std::string_view name, uint32_t from, uint32_t to);
  size_t size() const { return size_; }

 private:
  // A slot keeps the upper half of the name's hash (its tag, which also picks its home slot) and
  // position + 1; 0 marks an empty slot.
  static uint64_t slot(uint64_t h, uint32_t position) { return (h & 0xffffffff00000000ULL) | (uint64_t{position} + 1); }
  static uint32_t position_of(uint64_t s) { return static_cast<uint32_t>(s & 0xffffffffULL) - 1; }
  size_t home(uint64_t hash_or_slot) const { return static_cast<size_t>(hash_or_slot >> 32) & (slots_.size() - 1); }
  size_t locate(std::string_view name, uint32_t position) const;
  void grow();

  std::vector<uint64_t> slots_;  // 0: empty
  size_t size_ = 0;
};

}  // namespace shoal::gossip
