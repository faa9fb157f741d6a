// The only comm_wrap source that names the public exception types (see api_errors.hpp for why).
#include "comm_wrap/api_errors.hpp"

#include "shoal/errors.hpp"

namespace shoal::comm {

void throw_view_changed(uint64_t epoch, const std::string& why) { throw ViewChanged(epoch, why); }
void throw_timeout(const std::string& what) { throw Timeout(what); }
void throw_comm_error(const std::string& what) { throw shoal::Error(what); }

}  // namespace shoal::comm
