// setpriority on the calling thread's id: on Linux, PRIO_PROCESS with a thread id affects that thread.
#include "ckpt_service/background_priority.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.hpp"

namespace shoal::ckpt_service {

void lower_this_thread_priority() {
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  if (::setpriority(PRIO_PROCESS, tid, 19) != 0) {
    log::get(log::Component::ckpt).debug("ckpt: could not lower a background thread's priority: {}", std::strerror(errno));
  }
}

}  // namespace shoal::ckpt_service
