// parse_seconds: strtod over the whole text, then the range.
#include "cli/seconds_text.hpp"

#include <cstdlib>

namespace shoal::cli {

Result<double> parse_seconds(const std::string& text, ZeroSeconds zero, double max_seconds) {
  char* end = nullptr;
  const double s = std::strtod(text.c_str(), &end);
  const bool low_ok = zero == ZeroSeconds::allowed ? s >= 0 : s > 0;
  if (text.empty() || end != text.c_str() + text.size() || !low_ok || s > max_seconds) {
    if (zero == ZeroSeconds::refused) return fail("'" + text + "' is not a positive number of seconds");
    return fail("'" + text + "' is not a number of seconds from 0 to " +
                std::to_string(static_cast<long>(max_seconds)));
  }
  return s;
}

}  // namespace shoal::cli
