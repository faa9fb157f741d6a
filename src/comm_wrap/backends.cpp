// Reports the Gloo backend's presence (decided at configure time).
#include "comm_wrap/backends.hpp"

namespace shoal::comm {

bool gloo_compiled_in() {
#ifdef SHOAL_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

}  // namespace shoal::comm
