// CLI11 checks of the values that shoal's flags take: whole numbers in a range, durations in seconds, byte
// sizes, one of a few words, and any check of shoal's own that returns a Result. Each message names the
// value and what is wrong with it; CLI11 puts the flag in front ("--slots: 2000 is out of range [0, 1024]"),
// and the agent's config file runs the same checks on each of its lines.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shoal::cli {

// A whole number from min_value to max_value.
CLI::Validator whole_number(int64_t min_value, int64_t max_value);

enum class ZeroSeconds { refused, allowed };

// A duration in seconds ("2.5"), for every flag that takes one: one number throughout, not NaN, not
// negative, zero only when allowed, at most max_seconds. It hands CLI11 the number in its shortest
// spelling, so that a double bound to the flag receives exactly the number checked.
CLI::Validator seconds(ZeroSeconds zero, double max_seconds);

// A positive size in bytes with an optional binary suffix ("1048576", "512M", "64G"; K, M, G, T), handed on
// to CLI11 as the number of bytes.
CLI::Validator byte_size();

// One of `words`: "must be restart or connect, not 'sometimes'".
CLI::Validator one_of(std::vector<std::string> words);

// Refuses the empty value: "must not be empty".
CLI::Validator not_empty();

// A check of shoal's own: `check(value)` returns a Result (or Status) whose failure message is CLI11's.
template <class Check>
CLI::Validator checked_by(Check check) {
  return CLI::Validator(
      [check = std::move(check)](std::string& value) -> std::string {
        auto result = check(value);
        return result ? std::string() : result.error().message;
      },
      "");
}

}  // namespace shoal::cli
