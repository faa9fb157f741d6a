// Where a member table keeps the variable-length part of its records (name, address, encoded
// metadata): chunks of bytes (4 to 64 KiB) that never move, so a string_view into them stays valid until the
// table compacts (only when it expires tombstones). One allocation per chunk rather than up to
// three std::strings and a vector per record.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>


namespace shoal::gossip {

class TextArena {
 public:
  // Copies the concatenation of `parts` into the arena; returns where it starts.
  const char* store(std::initializer_list<std::string_view> parts);
  // Bytes handed out so far (spans replaced since count too, until the arena is rebuilt).
  size_t used() const { return used_; }

 private:
  static constexpr size_t kChunkBytes = 64 * 1024;
  static constexpr size_t kFirstChunkBytes = 4 * 1024;
  std::vector<std::unique_ptr<char[]>> chunks_;
  std::vector<std::unique_ptr<char[]>> large_;  // spans above a quarter chunk, one each
  size_t free_in_last_ = 0;  // unused bytes at the end of the last regular chunk
  char* next_ = nullptr;
  size_t used_ = 0;
};

}  // namespace shoal::gossip
