// Sealing handed-over state with a key derived from the cluster key (libsodium: crypto_kdf, keyed BLAKE2b).
#include "session/state_seal.hpp"

#include <sodium.h>

#include <array>
#include <string_view>

namespace shoal::session {
namespace {

constexpr char kKdfContext[crypto_kdf_CONTEXTBYTES + 1] = "shoalstt";
constexpr std::string_view kLabel = "shoal state v1";
constexpr size_t kTagBytes = 32;

void update_le(crypto_generichash_state& st, uint64_t v, int bytes) {
  unsigned char b[8];
  for (int i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
  crypto_generichash_update(&st, b, static_cast<unsigned long long>(bytes));
}

std::array<unsigned char, kTagBytes> tag_of(const wire::ClusterKey& key, std::span<const std::byte> data,
                                            const StatePlace& place) {
  std::array<unsigned char, crypto_generichash_KEYBYTES> subkey{};
  crypto_kdf_derive_from_key(subkey.data(), subkey.size(), 2, kKdfContext, key.bytes.data());
  crypto_generichash_state st;
  crypto_generichash_init(&st, subkey.data(), subkey.size(), kTagBytes);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(kLabel.data()), kLabel.size());
  update_le(st, place.epoch, 8);
  update_le(st, place.attempt, 4);
  update_le(st, place.sender, 4);
  update_le(st, place.world, 4);
  update_le(st, key.id, 4);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  std::array<unsigned char, kTagBytes> tag{};
  crypto_generichash_final(&st, tag.data(), tag.size());
  sodium_memzero(subkey.data(), subkey.size());
  return tag;
}

}  // namespace

std::vector<std::byte> seal_state(std::span<const std::byte> data, const wire::KeyRing* keys, const StatePlace& place) {
  if (keys == nullptr) return {};
  (void)wire::init_sodium();
  const wire::ClusterKey& key = keys->sending();
  std::vector<std::byte> seal(4 + kTagBytes);
  for (int i = 0; i < 4; ++i) seal[size_t(i)] = static_cast<std::byte>((key.id >> (8 * i)) & 0xff);
  const auto tag = tag_of(key, data, place);
  for (size_t i = 0; i < kTagBytes; ++i) seal[4 + i] = static_cast<std::byte>(tag[i]);
  return seal;
}

bool state_seal_valid(std::span<const std::byte> data, std::span<const std::byte> seal, const wire::KeyRing* keys,
                      const StatePlace& place) {
  if (keys == nullptr) return seal.empty();
  if (seal.size() != 4 + kTagBytes) return false;
  uint32_t id = 0;
  for (int i = 0; i < 4; ++i) id |= static_cast<uint32_t>(seal[size_t(i)]) << (8 * i);
  const wire::ClusterKey* key = keys->find(id);
  if (key == nullptr) return false;
  (void)wire::init_sodium();
  const auto tag = tag_of(*key, data, place);
  return crypto_verify_32(tag.data(), reinterpret_cast<const unsigned char*>(seal.data() + 4)) == 0;
}

}  // namespace shoal::session
