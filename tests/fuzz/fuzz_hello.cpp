// Fuzz target: the hello that opens every TCP connection (decode_hello), with and without an expected
// cluster id. An accepted hello encodes again (encode_hello) to one that decodes to the same fields.
#include <cstddef>
#include <cstdint>
#include <span>

#include "net/stream_hello.hpp"
#include "wire/packet.hpp"

namespace {

constexpr const char* kCluster = "fuzz-cluster";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const auto bytes = std::as_bytes(std::span(data, size));

  auto any = shoal::net::decode_hello(bytes, "");
  auto ours = shoal::net::decode_hello(bytes, kCluster);
  if (ours && !any) __builtin_trap();
  if (!any) return 0;

  // The cluster id is not in PeerHello; the packet decoder gives it (it accepted these bytes already).
  wire::PacketLimits limits;
  limits.max_bytes = shoal::net::kMaxHelloBytes;
  auto env = wire::decode_packet(bytes, limits);
  if (!env) __builtin_trap();
  const auto sender = wire::make_envelope(env->cluster_id(), any->name, any->generation, any->addr);
  // No larger than the hello it came from (its canonical encoding), so within kMaxHelloBytes.
  const auto again = shoal::net::encode_hello(sender, any->channel);
  if (again.empty()) __builtin_trap();
  auto back = shoal::net::decode_hello(again, env->cluster_id());
  if (!back || back->channel != any->channel || back->name != any->name || back->generation != any->generation ||
      back->addr != any->addr) {
    __builtin_trap();
  }
  return 0;
}
