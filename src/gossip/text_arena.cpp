// The member table's byte arena and the compact encoding of member metadata.
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

void TextArena::clear() {
  chunks_.clear();
  large_.clear();
  free_in_last_ = 0;
  next_ = nullptr;
  used_ = 0;
}

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint64_t get_varint(std::string_view& in) {
  uint64_t v = 0;
  for (int shift = 0; !in.empty() && shift < 64; shift += 7) {
    const auto b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) break;
  }
  return v;
}

void put_text(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}

std::string get_text(std::string_view& in) {
  const size_t n = std::min<uint64_t>(get_varint(in), in.size());
  std::string s(in.substr(0, n));
  in.remove_prefix(n);
  return s;
}

}  // namespace

std::string encode_meta(const MemberMeta& meta) {
  std::string out;
  if (meta.host.empty() && meta.slots == 0 && meta.labels.empty()) return out;  // the common empty case: 0 bytes
  put_text(out, meta.host);
  put_varint(out, meta.slots);
  put_varint(out, meta.labels.size());
  for (const auto& [k, v] : meta.labels) {
    put_text(out, k);
    put_text(out, v);
  }
  return out;
}

MemberMeta decode_meta(std::string_view in) {
  MemberMeta meta;
  if (in.empty()) return meta;
  meta.host = get_text(in);
  meta.slots = static_cast<uint32_t>(get_varint(in));
  const uint64_t labels = get_varint(in);
  for (uint64_t i = 0; i < labels && !in.empty(); ++i) {
    std::string k = get_text(in);
    meta.labels.emplace_back(std::move(k), get_text(in));
  }
  return meta;
}

}  // namespace shoal::gossip
