// Sealing and checking timing records with a key derived from the cluster key (libsodium: crypto_kdf, keyed
// BLAKE2b).
#include "health/record_seal.hpp"

#include <sodium.h>

#include <cstring>
#include <string_view>

namespace shoal::health {
namespace {

constexpr char kKdfContext[crypto_kdf_CONTEXTBYTES + 1] = "shoalhlt";
constexpr std::string_view kLabel = "shoal health record v1";

void put_u32(std::byte* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const std::byte* at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(at[i]) << (8 * i);
  return v;
}

void update_u64(crypto_generichash_state& st, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
  crypto_generichash_update(&st, b, sizeof(b));
}

void update_u32(crypto_generichash_state& st, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
  crypto_generichash_update(&st, b, sizeof(b));
}

std::array<unsigned char, kRecordTagBytes> tag_of(const wire::ClusterKey& key, std::span<const std::byte> record,
                                                  const RecordPlace& place) {
  std::array<unsigned char, crypto_generichash_KEYBYTES> subkey{};
  crypto_kdf_derive_from_key(subkey.data(), subkey.size(), 1, kKdfContext, key.bytes.data());
  crypto_generichash_state st;
  crypto_generichash_init(&st, subkey.data(), subkey.size(), kRecordTagBytes);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(kLabel.data()), kLabel.size());
  update_u64(st, place.epoch);
  update_u32(st, place.attempt);
  update_u64(st, place.step);
  update_u32(st, place.rank);
  update_u32(st, place.world);
  update_u32(st, key.id);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(record.data()), record.size());
  std::array<unsigned char, kRecordTagBytes> tag{};
  crypto_generichash_final(&st, tag.data(), tag.size());
  sodium_memzero(subkey.data(), subkey.size());
  return tag;
}

}  // namespace

SealedRecordBytes seal_record(const RecordBytes& record, const wire::KeyRing* keys, const RecordPlace& place) {
  SealedRecordBytes out{};
  std::memcpy(out.data(), record.data(), kRecordBytes);
  if (keys == nullptr) return out;  // id 0, zero tag: an open cluster
  (void)wire::init_sodium();        // the ring exists, so the agent initialised it already
  const wire::ClusterKey& key = keys->sending();
  put_u32(out.data() + kRecordBytes, key.id);
  const auto tag = tag_of(key, std::span<const std::byte>(record), place);
  std::memcpy(out.data() + kRecordBytes + 4, tag.data(), tag.size());
  return out;
}

OpenedRecord open_record(std::span<const std::byte> sealed, const wire::KeyRing* keys, const RecordPlace& place) {
  OpenedRecord r;
  if (sealed.size() != kSealedRecordBytes) return r;
  const auto record = sealed.first(kRecordBytes);
  if (keys == nullptr) return {RecordTrust::open, record};
  const wire::ClusterKey* key = keys->find(get_u32(sealed.data() + kRecordBytes));
  if (key == nullptr) return r;
  const auto tag = tag_of(*key, record, place);
  if (crypto_verify_16(tag.data(), reinterpret_cast<const unsigned char*>(sealed.data() + kRecordBytes + 4)) != 0) {
    return r;
  }
  return {RecordTrust::verified, record};
}

}  // namespace shoal::health
