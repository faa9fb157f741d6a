// The value checks of shoal's flags, as CLI11 validators.
#include "cli/flag_values.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace shoal::cli {

CLI::Validator whole_number(int64_t min_value, int64_t max_value) {
  return CLI::Validator(
      [min_value, max_value](std::string& value) -> std::string {
        int64_t n = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || end != value.data() + value.size()) return "'" + value + "' is not a whole number";
        if (n < min_value || n > max_value) {
          return value + " is out of range [" + std::to_string(min_value) + ", " + std::to_string(max_value) + "]";
        }
        return {};
      },
      "");
}

CLI::Validator seconds(ZeroSeconds zero, double max_seconds) {
  return CLI::Validator(
      [zero, max_seconds](std::string& value) -> std::string {
        char* end = nullptr;
        const double s = std::strtod(value.c_str(), &end);
        const bool low_ok = zero == ZeroSeconds::allowed ? s >= 0 : s > 0;  // false for NaN
        if (value.empty() || end != value.c_str() + value.size() || !low_ok || s > max_seconds) {
          if (zero == ZeroSeconds::refused) return "'" + value + "' is not a positive number of seconds";
          return "'" + value + "' is not a number of seconds from 0 to " +
                 std::to_string(static_cast<long>(max_seconds));
        }
        char text[32];
        const auto written = std::to_chars(text, text + sizeof text, s);
        value.assign(text, written.ptr);
        return {};
      },
      "");
}

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        const std::string_view rest(end, static_cast<size_t>(value.data() + value.size() - end));
        int shift = -1;
        if (rest.empty()) shift = 0;
        if (rest == "K" || rest == "k") shift = 10;
        if (rest == "M") shift = 20;
        if (rest == "G") shift = 30;
        if (rest == "T") shift = 40;
        if (ec != std::errc() || shift < 0 || v == 0 || v > (UINT64_MAX >> shift)) {
          return "'" + value + "' is not a positive size (bytes, or a number with K, M, G or T)";
        }
        value = std::to_string(v << shift);
        return {};
      },
      "");
}

CLI::Validator one_of(std::vector<std::string> words) {
  return CLI::Validator(
      [words = std::move(words)](std::string& value) -> std::string {
        for (const auto& w : words) {
          if (value == w) return {};
        }
        std::string list;
        for (size_t i = 0; i < words.size(); ++i) {
          list += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
        }
        return "must be " + list + ", not '" + value + "'";
      },
      "");
}

CLI::Validator not_empty() {
  return CLI::Validator([](std::string& value) { return value.empty() ? "must not be empty" : std::string(); }, "");
}

}  // namespace shoal::cli
