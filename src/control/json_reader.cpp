// A recursive-descent JSON parser with a depth bound, building JsonValue trees.
#include "control/json_reader.hpp"

#include <charconv>
#include <cstdlib>

namespace shoal::control {

JsonValue JsonValue::make_bool(bool b) {
  JsonValue v;
  v.kind_ = Kind::boolean;
  v.bool_ = b;
  return v;
}
JsonValue JsonValue::make_number(std::string text) {
  JsonValue v;
  v.kind_ = Kind::number;
  v.text_ = std::move(text);
  return v;
}
JsonValue JsonValue::make_string(std::string s) {
  JsonValue v;
  v.kind_ = Kind::string;
  v.text_ = std::move(s);
  return v;
}
JsonValue JsonValue::make_array(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind_ = Kind::array;
  v.items_ = std::move(items);
  return v;
}
JsonValue JsonValue::make_object(std::vector<std::pair<std::string, JsonValue>> members) {
  JsonValue v;
  v.kind_ = Kind::object;
  v.members_ = std::move(members);
  return v;
}

std::optional<bool> JsonValue::as_bool() const {
  if (kind_ != Kind::boolean) return std::nullopt;
  return bool_;
}
std::optional<double> JsonValue::as_double() const {
  if (kind_ != Kind::number) return std::nullopt;
  return std::strtod(text_.c_str(), nullptr);
}
std::optional<uint64_t> JsonValue::as_uint64() const {
  if (kind_ != Kind::number) return std::nullopt;
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), n);
  if (ec != std::errc() || end != text_.data() + text_.size()) return std::nullopt;
  return n;
}
std::optional<std::string> JsonValue::as_string() const {
  if (kind_ != Kind::string) return std::nullopt;
  return text_;
}
const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members_) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, size_t max_depth) : s_(text), max_depth_(max_depth) {}

  Result<JsonValue> document() {
    auto v = value(0);
    if (!v) return v;
    skip_ws();
    if (pos_ != s_.size()) return error("unexpected text after the document");
    return v;
  }

 private:
  Unexpected<Failure> error(const std::string& what) const {
    return fail("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Result<JsonValue> value(size_t depth) {
    if (depth > max_depth_) return error("nesting deeper than " + std::to_string(max_depth_));
    skip_ws();
    if (pos_ >= s_.size()) return error("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      auto s = string();
      if (!s) return fail(s.error().message);
      return JsonValue::make_string(std::move(*s));
    }
    if (literal("true")) return JsonValue::make_bool(true);
    if (literal("false")) return JsonValue::make_bool(false);
    if (literal("null")) return JsonValue();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    return error(std::string("unexpected character '") + c + "'");
  }

  Result<JsonValue> number() {
    const size_t start = pos_;
    const auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      return error("a number needs digits");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) return error("a fraction needs digits");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) return error("an exponent needs digits");
    }
    return JsonValue::make_number(std::string(s_.substr(start, pos_ - start)));
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::optional<uint32_t> hex4() {
    if (pos_ + 4 > s_.size()) return std::nullopt;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return std::nullopt;
    }
    return v;
  }

  Result<std::string> string() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) return error("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return error("raw control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return error("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          auto cp = hex4();
          if (!cp) return error("bad \\u escape");
          if (*cp >= 0xD800 && *cp <= 0xDBFF) {  // a high surrogate must pair with a low one
            if (!literal("\\u")) return error("unpaired surrogate");
            auto low = hex4();
            if (!low || *low < 0xDC00 || *low > 0xDFFF) return error("unpaired surrogate");
            *cp = 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00);
          } else if (*cp >= 0xDC00 && *cp <= 0xDFFF) {
            return error("unpaired surrogate");
          }
          append_utf8(out, *cp);
          break;
        }
        default:
          return error(std::string("unknown escape \\") + e);
      }
    }
  }

  Result<JsonValue> array(size_t depth) {
    ++pos_;
    std::vector<JsonValue> items;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return JsonValue::make_array(std::move(items));
    }
    while (true) {
      auto v = value(depth + 1);
      if (!v) return v;
      items.push_back(std::move(*v));
      skip_ws();
      if (pos_ >= s_.size()) return error("unterminated array");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') {
        ++pos_;
        return JsonValue::make_array(std::move(items));
      }
      return error("expected ',' or ']'");
    }
  }

  Result<JsonValue> object(size_t depth) {
    ++pos_;
    std::vector<std::pair<std::string, JsonValue>> members;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return JsonValue::make_object(std::move(members));
    }
    while (true) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return error("expected a member name");
      auto k = string();
      if (!k) return fail(k.error().message);
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return error("expected ':'");
      ++pos_;
      auto v = value(depth + 1);
      if (!v) return v;
      members.emplace_back(std::move(*k), std::move(*v));
      skip_ws();
      if (pos_ >= s_.size()) return error("unterminated object");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') {
        ++pos_;
        return JsonValue::make_object(std::move(members));
      }
      return error("expected ',' or '}'");
    }
  }

  std::string_view s_;
  size_t max_depth_;
  size_t pos_ = 0;
};

}  // namespace

Result<JsonValue> parse_json(std::string_view text, size_t max_depth) { return Parser(text, max_depth).document(); }

}  // namespace shoal::control
