// Throws the public exceptions of include/shoal/errors.hpp from comm_wrap sources.
// Why a separate file: errors.hpp's shoal::Error (an exception) and base/result.hpp's shoal::Error (a
// message struct, pulled in by base/log.hpp and ranks/) cannot meet in one translation unit, so the
// sources that log throw through these functions instead of naming the exception types.
#pragma once

#include <cstdint>
#include <string>

namespace shoal::comm {

[[noreturn]] void throw_view_changed(uint64_t epoch, const std::string& why);
[[noreturn]] void throw_timeout(const std::string& what);
// A failure that is neither: bad options, a bind that failed, a library error.
[[noreturn]] void throw_comm_error(const std::string& what);

}  // namespace shoal::comm
