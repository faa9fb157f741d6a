// device_copy for builds without the CUDA runtime: every call fails and says why.
#include "ckpt_shm/device_copy.hpp"

namespace shoal::ckpt::device {
namespace {

Status absent() {
  return fail(std::string("this build of shoal has no CUDA runtime (rebuild with CUDA under -Dcudatoolkit_root)"));
}

}  // namespace

bool compiled() { return false; }
Status pin(void*, size_t) { return absent(); }
void unpin(void*) {}
Status copy_to_host_async(std::span<std::byte>, const void*, void*) { return absent(); }
Status synchronize(void*) { return absent(); }
bool is_device_pointer(const void*) { return false; }

}  // namespace shoal::ckpt::device
