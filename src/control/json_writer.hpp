// A small streaming JSON writer for the control socket's replies: commas and nesting are tracked
// for the caller, strings are escaped per RFC 8259 and always come out as valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::control {

// `text` as a JSON string literal, quotes included. Control characters are escaped; bytes that are
// not valid UTF-8 become U+FFFD, so a name received from the network cannot break the document.
std::string json_quote(std::string_view text);

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The key of the next member; only inside an object.
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t n);
  JsonWriter& value(uint64_t n);
  JsonWriter& value(int n) { return value(static_cast<int64_t>(n)); }
  JsonWriter& value(unsigned n) { return value(static_cast<uint64_t>(n)); }
  JsonWriter& value(double d);  // NaN and infinities have no JSON spelling: written as null
  JsonWriter& value(bool b);
  JsonWriter& null();

  // The document; valid once every begun object and array has ended.
  const std::string& str() const { return out_; }
  bool complete() const { return stack_.empty() && !out_.empty(); }

 private:
  enum class Scope : uint8_t { object_expect_key, object_expect_value, array };
  void before_value();
  void raw(std::string_view text);

  std::string out_;
  std::vector<Scope> stack_;
  std::vector<bool> first_;  // parallel to stack_: nothing written in this scope yet
};

}  // namespace shoal::control
