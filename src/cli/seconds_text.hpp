// Durations that flags and config entries give in seconds ("2.5"): one parser for every such flag.
#pragma once

#include <string>

#include "base/result.hpp"

namespace shoal::cli {

enum class ZeroSeconds { refused, allowed };

// The number of seconds `text` says. Refuses text that is not one number throughout, NaN, a negative value,
// zero unless allowed, and anything above max_seconds, with a message naming the accepted range.
Result<double> parse_seconds(const std::string& text, ZeroSeconds zero, double max_seconds);

}  // namespace shoal::cli
