// Loading one agreed version: find it, show the caller its layout, copy and verify.
#include "session/restore_loading.hpp"

#include <cstring>
#include <memory>

#include "base/log.hpp"
#include "ckpt_shm/checksum.hpp"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "ckpt_shm/version_layout.hpp"
#include "shoal/errors.hpp"

namespace shoal::session {
namespace {

using Clock = std::chrono::steady_clock;

RestoreLayout layout_of(const ckpt::VersionInfo& info, const std::string& source, std::span<const std::byte> first) {
  RestoreLayout layout;
  layout.step = info.id.step;
  layout.saved_world = info.id.world;
  layout.saved_rank = info.id.rank;
  layout.source = source;
  for (const auto& b : info.buffers) layout.entries.push_back({b.name, b.offset, b.size});
  layout.first = first;
  return layout;
}

RestoredCheckpoint described(const ckpt::VersionInfo& info, std::string source, Clock::time_point started) {
  RestoredCheckpoint r;
  r.step = info.id.step;
  r.saved_world = info.id.world;
  r.saved_rank = info.id.rank;
  r.source = std::move(source);
  for (const auto& b : info.buffers) r.entries.push_back({b.name, b.offset, b.size});
  r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return r;
}

bool matches(const ckpt::VersionInfo& info, const LoadRequest& request) {
  return info.id.job == request.job && info.id.rank == request.rank && info.id.step == request.step;
}

// Shows the placer the version in `bytes` (structure and meta checksum verified, data not yet), then
// copies every placed buffer and verifies it on the way. The error names what did not verify.
Result<RestoredCheckpoint> place_and_copy(const ckpt::VersionInfo& info, std::span<const std::byte> bytes,
                                          const RestorePlacer& place, std::string source, Clock::time_point started) {
  std::span<const std::byte> first_bytes;
  if (!info.buffers.empty()) {
    const auto& first = info.buffers.front();
    first_bytes = bytes.subspan(first.offset, first.size);
    if (ckpt::buffer_checksum(first_bytes) != first.checksum) {
      return fail("buffer '" + first.name + "' does not match its checksum");
    }
  }
  const RestoreLayout layout = layout_of(info, source, first_bytes);
  std::vector<std::span<std::byte>> into;
  try {
    into = place(layout);
  } catch (const VersionRefused& e) {
    return fail(std::string("its content was refused: ") + e.what());
  } catch (const std::exception& e) {
    throw PlacerFailed(e.what());
  }
  if (into.size() != info.buffers.size()) {
    throw PlacerFailed("the placer named " + std::to_string(into.size()) + " destinations for " +
                       std::to_string(info.buffers.size()) + " buffers");
  }
  for (size_t i = 0; i < into.size(); ++i) {
    const auto& b = info.buffers[i];
    if (into[i].empty()) continue;
    if (into[i].size() != b.size) {
      throw PlacerFailed("the destination of buffer '" + b.name + "' holds " + std::to_string(into[i].size()) +
                         " bytes, not " + std::to_string(b.size));
    }
    if (!ckpt::copy_and_verify(into[i], bytes.subspan(b.offset, b.size), b.checksum)) {
      return fail("buffer '" + b.name + "' does not match its checksum");
    }
  }
  return described(info, std::move(source), started);
}

// One local copy: decoded (in place, the data is verified while it is copied out; else here, before it
// is copied), then placed or copied. nullopt, with the reason logged, when it does not hold an intact copy.
std::optional<RestoredCheckpoint> load_segment(const LoadRequest& request, std::span<const std::byte> bytes,
                                               const std::string& segment, Clock::time_point started) {
  // The data is verified while it is copied out (one pass, and a save that reuses the slot meanwhile
  // is caught by the very copy it would have torn).
  auto info = ckpt::decode_version(bytes, ckpt::DataCheck::skip);
  if (!info || !matches(*info, request)) {
    log::ckpt().warn("ckpt: local copy {} of rank {} step {} refused: {}", segment, request.rank, request.step,
                     info ? std::string("it changed meanwhile") : info.error().detail);
    return std::nullopt;
  }
  if (request.place) {
    auto placed = place_and_copy(*info, bytes, *request.place, "local", started);
    if (placed) return std::move(*placed);
    log::ckpt().warn("ckpt: local copy {} of rank {} step {} refused: {}", segment, request.rank, request.step,
                     placed.error().message);
    return std::nullopt;
  }
  auto r = described(*info, "local", started);
  r.data.resize(info->total_bytes);
  std::memcpy(r.data.data(), bytes.data(), info->data_offset);
  for (const auto& b : info->buffers) {
    if (!ckpt::copy_and_verify(std::span<std::byte>(r.data).subspan(b.offset, b.size), bytes.subspan(b.offset, b.size),
                               b.checksum)) {
      log::ckpt().warn("ckpt: local copy {} of rank {} step {} refused: buffer '{}' does not match its checksum",
                       segment, request.rank, request.step, b.name);
      return std::nullopt;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return r;
}

}  // namespace

std::optional<RestoredCheckpoint> load_mapped(const LoadRequest& request, std::span<const std::byte> segment) {
  return load_segment(request, segment, "(this process's own slot)", Clock::now());
}

std::optional<RestoredCheckpoint> load_local(const LoadRequest& request) {
  const auto started = Clock::now();
  for (const auto& h : ckpt::scan_held(request.store)) {
    if (!h.version || !matches(*h.version, request)) continue;
    auto seg = ckpt::ShmSegment::open_existing(h.segment);
    if (!seg) continue;
    if (auto r = load_segment(request, std::span<const std::byte>(seg->bytes()), h.segment, started)) return r;
  }
  return std::nullopt;
}

std::optional<RestoredCheckpoint> load_from_peer(const LoadRequest& request, const ckpt_service::TransferPeer& peer,
                                                 const std::string& holder) {
  const auto started = Clock::now();
  ckpt_service::TransferLimits limits;
  limits.max_stream_bytes = request.max_bytes;  // the peer's announcement is checked against it first
  // Then the version's own description: its whole size and its first buffer (which the scattered path
  // allocates here) within what the reports promised.
  const auto oversized = [&](const ckpt::VersionInfo& info) -> std::optional<std::string> {
    if (info.total_bytes > request.max_bytes) {
      return holder + " sent a version of " + std::to_string(info.total_bytes) + " bytes; the reports promised " +
             std::to_string(request.max_bytes);
    }
    if (!info.buffers.empty() && info.buffers.front().size > info.total_bytes) {
      return holder + " sent a first buffer larger than its version";
    }
    return std::nullopt;
  };
  if (request.place) {
    // Scattered: the first buffer into memory of this call, the others, once the placer has seen it,
    // straight where it says (the receiver verifies each as it arrives), so nothing is copied twice.
    std::vector<std::byte> first;
    std::vector<std::vector<std::byte>> unwanted;  // buffers the placer did not want still arrive somewhere
    const auto place = [&](const ckpt::VersionInfo& info, size_t index,
                           const ckpt::VersionReceiver& receiver) -> Result<std::vector<std::span<std::byte>>> {
      if (index == 0) {
        if (auto why = oversized(info)) return fail(*why);
        first.resize(info.buffers.front().size);
        return std::vector<std::span<std::byte>>{std::span<std::byte>(first)};
      }
      const RestoreLayout layout = layout_of(info, holder, receiver.buffer_destination(0));
      std::vector<std::span<std::byte>> into;
      try {
        into = (*request.place)(layout);
      } catch (const VersionRefused& e) {
        return fail(std::string("its content was refused: ") + e.what());
      } catch (const std::exception& e) {
        throw PlacerFailed(e.what());
      }
      if (into.size() != info.buffers.size()) {
        throw PlacerFailed("the placer named " + std::to_string(into.size()) + " destinations for " +
                           std::to_string(info.buffers.size()) + " buffers");
      }
      std::vector<std::span<std::byte>> rest;
      for (size_t i = 1; i < into.size(); ++i) {
        const auto& b = info.buffers[i];
        if (into[i].empty() && b.size > 0) {
          unwanted.emplace_back(b.size);
          into[i] = std::span<std::byte>(unwanted.back());
        }
        if (into[i].size() != b.size) {
          throw PlacerFailed("the destination of buffer '" + b.name + "' holds " + std::to_string(into[i].size()) +
                             " bytes, not " + std::to_string(b.size));
        }
        rest.push_back(into[i]);
      }
      return rest;
    };
    auto got = ckpt_service::fetch_version_scattered(peer, request.job, request.rank, request.step, place, limits);
    if (!got) {
      log::ckpt().warn("ckpt: fetching rank {} step {} from {} failed: {}", request.rank, request.step, holder,
                       got.error().message);
      return std::nullopt;
    }
    return described(*got, holder, started);
  }
  std::vector<std::byte> data;
  auto got = ckpt_service::fetch_version(
      peer, request.job, request.rank, request.step,
      [&](const ckpt::VersionInfo& info) -> Result<std::span<std::byte>> {
        if (auto why = oversized(info)) return fail(*why);
        data.resize(info.total_bytes);
        return std::span<std::byte>(data);
      },
      limits);
  if (!got) {
    log::ckpt().warn("ckpt: fetching rank {} step {} from {} failed: {}", request.rank, request.step, holder,
                     got.error().message);
    return std::nullopt;
  }
  auto r = described(*got, holder, started);
  r.data = std::move(data);
  return r;
}

}  // namespace shoal::session
