// The checkpoint service's fetches: a whole version (FETCH) or chunk runs of it (FETCH_RANGES), from a
// replica this host keeps or a local slot.
#include <chrono>

#include "base/log.hpp"
#include "ckpt_service/held_versions.hpp"
#include "ckpt_service/ranged_transfer.hpp"
#include "ckpt_service/service.hpp"
#include "ckpt_shm/shm_segment.hpp"

namespace shoal::ckpt_service {

void CheckpointService::serve_fetch_request(const wire::CkptRequest& request, net::BlockingConn& conn) {
  // What keeps the bytes mapped while they go out: a replica's own mapping in the store, already in
  // memory (a new mapping of a large segment costs tens of milliseconds per GB before the first byte),
  // else a new mapping of a local slot.
  std::shared_ptr<const ckpt::ShmSegment> segment;
  std::optional<ckpt::VersionInfo> info;
  const bool ranged = request.kind() == wire::CkptRequest::FETCH_RANGES;
  if (request.job() == cfg_.job) {
    {
      std::lock_guard lock(store_mu_);
      if (replicas_) segment = replicas_->share(request.rank(), request.step());
    }
    if (segment) {
      if (auto decoded = ckpt::decode_version(segment->bytes(), ckpt::DataCheck::skip)) info = std::move(*decoded);
    }
    for (const auto& h : holding(held(), cfg_.job, request.rank(), request.step())) {
      if (info) break;
      // A ranged fetch sends a part: its pages fault in as they go out, the rest are never mapped.
      auto version = map_version(h, cfg_.job, request.rank(), request.step(), owners(), !ranged);
      if (!version) continue;
      segment = std::make_shared<const ckpt::ShmSegment>(std::move(version->segment));
      info = std::move(version->info);
    }
  }
  if (!info) {
    (void)(ranged ? serve_fetch_ranges(conn, {}, nullptr, limits(nullptr))
                  : serve_fetch(conn, {}, nullptr, limits(nullptr)));
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  const auto bytes = segment->bytes().first(info->total_bytes);
  // A ranged fetch also reads the chunk lists the segment keeps after the version (chunk_lists.hpp).
  auto sent = ranged ? serve_fetch_ranges(conn, segment->bytes(), &*info, limits(nullptr))
                     : serve_fetch(conn, bytes, &*info, limits(nullptr));
  auto& logger = log::get(log::Component::ckpt);
  std::lock_guard lock(mu_);
  if (sent) {
    ++counters_.fetches_served;
    logger.debug("ckpt: served {}rank {} step {} in {:.3f} s", ranged ? "ranges of " : "", request.rank(),
                 request.step(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  } else {
    logger.warn("ckpt: serving {}rank {} step {} failed: {}", ranged ? "ranges of " : "", request.rank(),
                request.step(), sent.error().message);
  }
}

}  // namespace shoal::ckpt_service
