// Backend choice (and NCCL's shrink-or-init decision) for a session's communicator.
#include "comm_wrap/session_communicator.hpp"

#include <variant>

#include "base/log.hpp"
#include "shoal/errors.hpp"
#include "comm_wrap/rebuild_plan.hpp"
#include "comm_wrap/timed_communicator.hpp"
#if defined(SHOAL_HAVE_GLOO)
#include "comm_wrap/gloo/communicator.hpp"
#endif
#if defined(SHOAL_HAVE_NCCL)
#include "comm_wrap/nccl/communicator.hpp"
#endif

namespace shoal::comm {
namespace {

std::shared_ptr<Communicator> make_gloo(const SessionCommSpec& spec, RendezvousStore& store) {
#if defined(SHOAL_HAVE_GLOO)
  GlooOptions o;
  o.rank = spec.rank;
  o.world_size = spec.world_size;
  o.epoch = spec.epoch;
  o.bind_host = spec.bind_ip;
  o.collective_timeout = spec.collective_timeout;
  o.rendezvous_timeout = spec.rendezvous_timeout;
  o.on_peer_lost = spec.on_peer_lost;
  return std::shared_ptr<Communicator>(make_gloo_communicator(o, store));
#else
  (void)spec;
  (void)store;
  throw Error("this libshoal was built without Gloo: no CPU communicator (rebuild with -Dgloo=enabled)");
#endif
}

std::shared_ptr<Communicator> make_nccl(const SessionCommSpec& spec, RendezvousStore& store) {
#if defined(SHOAL_HAVE_NCCL)
  NcclOptions o;
  o.rank = spec.rank;
  o.world_size = spec.world_size;
  o.epoch = spec.epoch;
  o.cuda_device = spec.cuda_device;
  o.rendezvous_timeout = spec.rendezvous_timeout;
  o.collective_timeout = spec.collective_timeout;
  o.node_rank = spec.node_rank;
  o.local_rank = spec.local_rank;
  o.node_count = spec.node_count;
  o.store_at = spec.store_at;
  auto* previous = dynamic_cast<NcclCommunicator*>(backend_of(spec.previous));
  if (previous && spec.before && spec.after) {
    const auto plan = plan_rebuild(*spec.before, *spec.after, previous->rebuild_state());
    if (const auto* shrink = std::get_if<Shrink>(&plan)) {
      try {
        return std::shared_ptr<Communicator>(NcclCommunicator::shrink(*previous, *shrink, o));
      } catch (const std::exception& e) {
        // A survivor that reached another plan leaves the shrink unfinished; everyone then inits fresh.
        log::get(log::Component::comm).warn("nccl shrink into epoch {} failed ({}); fresh init instead", o.epoch,
                                            e.what());
      }
    } else {
      log::get(log::Component::comm).info("nccl epoch {}: fresh init ({})", o.epoch, std::get<FreshInit>(plan).reason);
    }
  }
  return std::shared_ptr<Communicator>(NcclCommunicator::create(o, store));
#else
  (void)spec;
  (void)store;
  throw Error("this libshoal was built without NCCL: no GPU communicator (install NCCL under "
                   "cudatoolkit_root and rebuild)");
#endif
}

}  // namespace

std::shared_ptr<Communicator> make_session_communicator(const SessionCommSpec& spec, RendezvousStore& store) {
  auto backend = spec.backend == Backend::nccl ? make_nccl(spec, store) : make_gloo(spec, store);
  return std::make_shared<TimedCommunicator>(std::move(backend));
}

}  // namespace shoal::comm
