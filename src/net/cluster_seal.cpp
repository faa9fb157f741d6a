// ClusterSeal: sealing and opening under the cluster key, with wall-clock time for the replay guards.
#include "net/cluster_seal.hpp"

#include <chrono>
#include <cstdio>

namespace shoal::net {
namespace {

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

wire::RejectCause cause_of(wire::OpenCause c) {
  switch (c) {
    case wire::OpenCause::not_sealed:
      return wire::RejectCause::no_key;
    case wire::OpenCause::truncated:
      return wire::RejectCause::truncated;  // too short to hold a seal
    case wire::OpenCause::stale:
      return wire::RejectCause::stale;
    case wire::OpenCause::replayed:
      return wire::RejectCause::replayed;
    default:
      return wire::RejectCause::bad_auth;
  }
}

std::vector<std::byte> copy(std::span<const std::byte> bytes) { return {bytes.begin(), bytes.end()}; }

}  // namespace

ClusterSeal::ClusterSeal(std::optional<wire::KeyRing> keys) {
  if (keys) {
    packets_.emplace(*keys);
    hellos_.emplace(std::move(*keys));
  }
}

bool ClusterSeal::keyed() const {
  std::lock_guard lock(mu_);
  return packets_.has_value();
}

std::vector<std::byte> ClusterSeal::seal_packet(std::span<const std::byte> plain) {
  std::lock_guard lock(mu_);
  return packets_ ? packets_->seal(plain, now_unix_ms()) : copy(plain);
}

std::vector<std::byte> ClusterSeal::seal_hello(std::span<const std::byte> plain) {
  std::lock_guard lock(mu_);
  return hellos_ ? hellos_->seal(plain, now_unix_ms()) : copy(plain);
}

Result<std::vector<std::byte>, wire::DecodeError> ClusterSeal::open_packet(std::span<const std::byte> bytes) {
  std::lock_guard lock(mu_);
  return open(bytes, packet_guard_);
}

Result<std::vector<std::byte>, wire::DecodeError> ClusterSeal::open_hello(std::span<const std::byte> bytes) {
  std::lock_guard lock(mu_);
  return open(bytes, hello_guard_);
}

Result<std::vector<std::byte>, wire::DecodeError> ClusterSeal::open(std::span<const std::byte> bytes,
                                                                    wire::ReplayGuard& guard) {
  if (!packets_) {
    if (wire::looks_sealed(bytes)) {
      return fail(wire::DecodeError{wire::RejectCause::no_key,
                                    "sealed with a cluster key, but this host has none (--key-file)"});
    }
    return copy(bytes);
  }
  auto opened = packets_->open(bytes, now_unix_ms(), guard);
  if (!opened) {
    const auto& e = opened.error();
    std::string detail = e.message;
    if (e.cause == wire::OpenCause::not_sealed) detail = "not sealed with the cluster key (a host without --key-file?)";
    return fail(wire::DecodeError{cause_of(e.cause), std::move(detail)});
  }
  return std::move(*opened);
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
