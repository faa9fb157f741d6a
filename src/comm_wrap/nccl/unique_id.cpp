// Publishing and reading an epoch's NCCL unique id through the rendezvous store.
#include "comm_wrap/nccl/unique_id.hpp"

#include <cstring>
#include <string>

#include "shoal/errors.hpp"

namespace shoal::comm {

ncclUniqueId exchange_unique_id(int rank, RendezvousStore& store, std::chrono::milliseconds timeout) {
  ncclUniqueId id;
  if (rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) throw Error(std::string("nccl backend: ncclGetUniqueId: ") + ncclGetErrorString(r));
    store.set(kNcclUniqueIdKey, Bytes(id.internal, id.internal + sizeof(id.internal)));
    return id;
  }
  const Bytes bytes = store.get(kNcclUniqueIdKey, timeout);
  if (bytes.size() != sizeof(id.internal)) {
    throw Error("nccl backend: the unique id in the store has " + std::to_string(bytes.size()) + " bytes, not " +
                std::to_string(sizeof(id.internal)));
  }
  std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
  return id;
}

}  // namespace shoal::comm
