// Publishing and reading an epoch's NCCL unique id through the rendezvous store.
#include "comm_wrap/nccl/unique_id.hpp"

#include <cstring>
#include <string>

#include "shoal/errors.hpp"

namespace shoal::comm {

namespace {

Bytes new_unique_id() {
  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) throw Error(std::string("nccl backend: ncclGetUniqueId: ") + ncclGetErrorString(r));
  return Bytes(id.internal, id.internal + sizeof(id.internal));
}

ncclUniqueId unique_id_of(const Bytes& bytes) {
  ncclUniqueId id;
  if (bytes.size() != sizeof(id.internal)) {
    throw Error("nccl backend: the unique id in the store has " + std::to_string(bytes.size()) + " bytes, not " +
                std::to_string(sizeof(id.internal)));
  }
  std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
  return id;
}

}  // namespace

ncclUniqueId exchange_unique_id(int rank, RendezvousStore& store, std::chrono::milliseconds timeout) {
  if (rank == 0) {
    const Bytes bytes = new_unique_id();
    store.set(kNcclUniqueIdKey, bytes);
    return unique_id_of(bytes);
  }
  return unique_id_of(store.get(kNcclUniqueIdKey, timeout));
}

ncclUniqueId exchange_unique_id(const BootstrapRoute& route, const StoreAt& store_at,
                                std::chrono::milliseconds timeout) {
  return unique_id_of(share_bootstrap_value(route, kNcclUniqueIdKey, new_unique_id, store_at, timeout));
}

}  // namespace shoal::comm
