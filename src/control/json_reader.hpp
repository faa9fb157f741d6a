// A small JSON reader (RFC 8259) for the documents the control socket sends back: `shoal members`
// renders them as tables, tests inspect them. Bounded nesting; every error names its offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace shoal::control {

class JsonValue {
 public:
  enum class Kind : uint8_t { null, boolean, number, string, array, object };

  JsonValue() = default;
  static JsonValue make_bool(bool b);
  static JsonValue make_number(std::string text);
  static JsonValue make_string(std::string s);
  static JsonValue make_array(std::vector<JsonValue> items);
  static JsonValue make_object(std::vector<std::pair<std::string, JsonValue>> members);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }

  // Typed access: nullopt when the value is of another kind (or a number does not fit).
  std::optional<bool> as_bool() const;
  std::optional<double> as_double() const;
  std::optional<uint64_t> as_uint64() const;
  std::optional<std::string> as_string() const;

  // Array items and object members; empty for other kinds.
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  // The first member named `key`, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view key) const;

 private:
  Kind kind_ = Kind::null;
  bool bool_ = false;
  std::string text_;  // a string's value or a number's spelling
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

Result<JsonValue> parse_json(std::string_view text, size_t max_depth = 64);

}  // namespace shoal::control
