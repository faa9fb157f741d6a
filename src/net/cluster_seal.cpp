// ClusterSeal: sealing and opening under the cluster key, with wall-clock time for the replay guards.
#include "net/cluster_seal.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace shoal::net {
namespace {

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::byte> copy(std::span<const std::byte> bytes) { return {bytes.begin(), bytes.end()}; }

}  // namespace

ClusterSeal::ClusterSeal(std::optional<wire::KeyRing> keys) : cipher_offer_(wire::local_cipher_offer()) {
  if (keys) {
    packets_.emplace(*keys);
    hellos_.emplace(std::move(*keys));
  }
}

bool ClusterSeal::keyed() const {
  std::lock_guard lock(mu_);
  return packets_.has_value();
}

std::vector<std::byte> ClusterSeal::seal_packet(std::span<const std::byte> plain, std::string_view destination) {
  std::lock_guard lock(mu_);
  return packets_ ? packets_->seal(plain, destination, now_unix_ms()) : copy(plain);
}

Result<std::vector<std::byte>, wire::DecodeError> ClusterSeal::open_packet(std::span<const std::byte> bytes,
                                                                           wire::Destinations own) {
  std::lock_guard lock(mu_);
  if (!packets_) {
    if (wire::looks_sealed(bytes)) {
      return fail(wire::DecodeError{wire::RejectCause::no_key,
                                    "sealed with a cluster key, but this host has none (--key-file)"});
    }
    return copy(bytes);
  }
  auto opened = packets_->open(bytes, own, now_unix_ms(), packet_guard_);
  if (!opened) {
    const auto& e = opened.error();
    std::string detail = e.message;
    if (e.cause == wire::OpenCause::not_sealed) detail = "not sealed with the cluster key (a host without --key-file?)";
    return fail(wire::DecodeError{wire::reject_cause(e.cause), std::move(detail)});
  }
  return std::move(*opened);
}

wire::ClientHandshake ClusterSeal::start_handshake(std::span<const std::byte> hello, std::string_view destination) {
  std::lock_guard lock(mu_);
  if (!hellos_) std::abort();  // callers ask keyed() first: an open cluster has no handshake
  return wire::ClientHandshake::start(*hellos_, hello, destination, now_unix_ms(), cipher_offer_);
}

Result<wire::ServerHandshake, wire::DecodeError> ClusterSeal::accept_handshake(std::span<const std::byte> first,
                                                                               wire::Destinations own) {
  std::lock_guard lock(mu_);
  if (!hellos_) return fail(wire::DecodeError{wire::RejectCause::no_key, "this host has no cluster key"});
  auto accepted =
      wire::ServerHandshake::accept(hellos_->keys(), first, own, now_unix_ms(), hello_guard_, cipher_offer_);
  if (!accepted && accepted.error().cause == wire::RejectCause::no_key) {
    return fail(
        wire::DecodeError{wire::RejectCause::no_key, "not sealed with the cluster key (a host without --key-file?)"});
  }
  return accepted;
}

Status ClusterSeal::set_keys(std::optional<wire::KeyRing> keys) {
  std::lock_guard lock(mu_);
  if (!packets_ && keys)
    return fail(std::string("the cluster was started open: a key needs a restart with --key-file"));
  if (packets_ && !keys) return fail(std::string("the cluster has a key: removing it needs a restart"));
  if (!keys) return Ok{};
  packets_->set_keys(*keys);
  hellos_->set_keys(std::move(*keys));
  return Ok{};
}

std::string ClusterSeal::key_ids() const {
  std::lock_guard lock(mu_);
  std::string out;
  if (!packets_) return out;
  for (const auto& k : packets_->keys().keys()) {
    char text[16];
    std::snprintf(text, sizeof text, "%08x", k.id);
    out += (out.empty() ? "" : ", ") + std::string(text);
  }
  return out;
}

Result<std::optional<wire::KeyRing>> load_cluster_keys(const std::string& path) {
  if (path.empty()) return std::optional<wire::KeyRing>();
  auto ring = wire::load_key_file(path);
  if (!ring) return fail(ring.error().message);
  return std::optional<wire::KeyRing>(std::move(*ring));
}

}  // namespace shoal::net
