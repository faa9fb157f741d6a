// JSON writing: string escaping with UTF-8 validation, and the comma/nesting bookkeeping.
#include "control/json_writer.hpp"

#include <cassert>
#include <cmath>
#include <cstdio>

namespace shoal::control {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t len = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

}  // namespace

std::string json_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    const size_t len = utf8_sequence_length(text, i);
    if (len == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  out += '"';
  return out;
}

void JsonWriter::raw(std::string_view text) { out_.append(text); }

void JsonWriter::before_value() {
  if (stack_.empty()) {
    assert(out_.empty() && "a JSON document has one top-level value");
    return;
  }
  Scope& top = stack_.back();
  if (top == Scope::array) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  } else {
    assert(top == Scope::object_expect_value && "a value inside an object needs a key first");
    top = Scope::object_expect_key;
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back(Scope::object_expect_key);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  assert(!stack_.empty() && stack_.back() == Scope::object_expect_key);
  stack_.pop_back();
  first_.pop_back();
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back(Scope::array);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  assert(!stack_.empty() && stack_.back() == Scope::array);
  stack_.pop_back();
  first_.pop_back();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  assert(!stack_.empty() && stack_.back() == Scope::object_expect_key);
  if (!first_.back()) out_ += ',';
  first_.back() = false;
  out_ += json_quote(k);
  out_ += ':';
  stack_.back() = Scope::object_expect_value;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  raw(json_quote(s));
  return *this;
}

JsonWriter& JsonWriter::value(int64_t n) {
  before_value();
  raw(std::to_string(n));
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t n) {
  before_value();
  raw(std::to_string(n));
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  before_value();
  if (!std::isfinite(d)) {
    raw("null");
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", d);
  raw(buf);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  raw(b ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  raw("null");
  return *this;
}

}  // namespace shoal::control
