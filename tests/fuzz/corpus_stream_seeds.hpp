// Seeds of the connection fuzz targets (fuzz_handshake, fuzz_sealed_stream), for make_corpus: first
// messages, replies, proofs and whole exchanges; sealed streams kept, changed and raw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "wire/cluster_key.hpp"

namespace shoal::fuzz {

using SeedSink =
    std::function<void(const std::string& target, const std::string& name, std::span<const std::byte> bytes)>;

// `keys` and `now_ms` as the targets hold them, `hello` a hello payload, `to` an address the targets
// receive at.
void stream_seeds(const wire::KeyRing& keys, std::span<const std::byte> hello, std::string_view to, int64_t now_ms,
                  const SeedSink& save);

}  // namespace shoal::fuzz
