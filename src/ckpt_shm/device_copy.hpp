// Copies between CUDA device memory and checkpoint segments, and the page-locking that makes them
// fast. Declared everywhere; device/cuda_copy.cpp implements it where the build found the CUDA
// runtime, device/absent_copy.cpp elsewhere (every call then fails with a sentence saying so).
//
// Why page-lock: a device-to-host copy into pageable memory goes through a pinned staging buffer of
// the driver in pieces, at a fraction of the link's speed; into registered memory the copy engine
// writes straight into the segment. cudaHostRegister pins pages that already exist, so it costs a
// pass over the mapping once, and every later save into that slot runs at pinned speed.
#pragma once

#include <cstddef>
#include <span>

#include "base/result.hpp"

namespace shoal::ckpt::device {

// Whether this build has the CUDA runtime (a machine without a GPU or a driver still fails at run time).
bool compiled();

// Page-locks [data, data + bytes) for every CUDA device of this process (cudaHostRegister, portable).
// Fails with the CUDA error where there is no device or driver, or the range is already registered.
Status pin(void* data, size_t bytes);
// Undoes pin; the range must be exactly what pin registered. Errors are logged, not returned: it
// runs before munmap, which must happen regardless.
void unpin(void* data);

// Starts copying device memory into host memory on `stream` (a cudaStream_t; nullptr: the legacy
// default stream) and returns before the copy ends; synchronize(stream) waits for it.
Status copy_to_host_async(std::span<std::byte> dst, const void* device_src, void* stream);
// Waits for everything queued on `stream`; fails with the first error of the copies on it.
Status synchronize(void* stream);
// Whether `p` is device memory (cudaPointerGetAttributes): the save API refuses host pointers there,
// which would otherwise copy at pageable speed or, for a stray pointer, fault inside the driver.
bool is_device_pointer(const void* p);

}  // namespace shoal::ckpt::device
