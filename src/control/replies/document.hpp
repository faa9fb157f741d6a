// The control socket's documents as JSON (nlohmann): the one way a reply is written, and the checked
// way one is read back into its typed struct. Nothing here throws on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace shoal::control {

// How a member converts: nlohmann's own way (to_json/from_json found by ADL), except that an integer
// member reads only a JSON integer that fits its type. nlohmann would cast any number: 1e300 or -1.5 into
// a uint32_t is undefined behaviour, and -1 would read as 2^64-1.
template <class T, class = void>
struct JsonSerializer : nlohmann::adl_serializer<T> {};

template <class T>
struct JsonSerializer<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  template <class BasicJson>
  static void to_json(BasicJson& j, T value) {
    nlohmann::adl_serializer<T>::to_json(j, value);
  }
  template <class BasicJson>
  static void from_json(const BasicJson& j, T& value) {
    if (const auto* u = j.template get_ptr<const typename BasicJson::number_unsigned_t*>()) {
      if (std::in_range<T>(*u)) return void(value = static_cast<T>(*u));
    } else if (const auto* i = j.template get_ptr<const typename BasicJson::number_integer_t*>()) {
      if (std::in_range<T>(*i)) return void(value = static_cast<T>(*i));
    } else {
      throw BasicJson::type_error::create(302,
                                          std::string("type must be an integer, but is ") + j.type_name() +
                                              (j.is_number() ? " " + j.dump() : std::string()),
                                          &j);
    }
    throw BasicJson::type_error::create(302, "the integer " + j.dump() + " is out of range", &j);
  }
};

// Objects keep their members in the order written: people read `--json` output and scripts diff it
// (nlohmann::json would sort the keys). Otherwise nlohmann::ordered_json, with JsonSerializer.
using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t, std::uint64_t,
                                  double, std::allocator, JsonSerializer>;

// Nesting deeper than this is refused before anything is built (hostile input cannot exhaust the stack).
inline constexpr size_t kMaxDocumentDepth = 64;

// `doc` as compact text. Strings that came from the network may hold bytes that are not UTF-8: each
// becomes U+FFFD rather than an exception or a broken document.
std::string dump_document(const Json& doc);

// `reply` (a struct of this folder's replies/) as the text the control socket sends.
template <class Reply>
std::string write_reply(const Reply& reply) {
  return dump_document(Json(reply));
}

// Parses untrusted text; a failure says where and why. Never throws.
Result<Json> parse_document(std::string_view text, size_t max_depth = kMaxDocumentDepth);

// The message of an error document ({"error": ..., "requests": [...]}, or a reply that failed and says
// why under "error"); nullopt for every other document.
std::optional<std::string> error_of(const Json& doc);

// A nlohmann exception's text without its "[json.exception.type_error.302] " prefix.
std::string json_error_text(const std::exception& e);

// `doc` as the reply type `Reply`. Each reply type names what it is (`kWhat`, "a member list") and the
// members without which a document is not one (`kRequiredKeys`); other members missing take their
// defaults (a document from an older agent), unknown ones are ignored (a newer agent). A member of the
// wrong type is a failure, never an exception.
template <class Reply>
Result<Reply> read_reply(const Json& doc) {
  const std::string what = Reply::kWhat;
  if (!doc.is_object()) return fail("the reply is not " + what + " (a JSON " + doc.type_name() + ", not an object)");
  for (const char* key : Reply::kRequiredKeys) {
    if (!doc.contains(key)) return fail("the reply is not " + what + " (it has no \"" + key + "\")");
  }
  try {
    return doc.template get<Reply>();
  } catch (const nlohmann::json::exception& e) {
    return fail("the reply is not " + what + ": " + json_error_text(e));
  }
}

// Text to `Reply`: a parse failure, an error document (its message; unless Reply is the error document,
// marked kIsErrorDocument) or a document of another shape is a failure.
template <class Reply>
Result<Reply> parse_reply(std::string_view text) {
  auto doc = parse_document(text);
  if (!doc) return fail(doc.error().message);
  if constexpr (!requires { Reply::kIsErrorDocument; }) {
    if (auto error = error_of(*doc)) return fail(*error);
  }
  return read_reply<Reply>(*doc);
}

// For hand-written from_json: a nested value that must be an object (`what` names it in the error).
void require_object(const Json& j, const char* what);

// `j[key]` into `out` when present (and, for an optional, not null); otherwise `out` keeps its value
// (the default), as for a document written before the member existed.
template <class T>
void read_member(const Json& j, const char* key, T& out) {
  if (const auto it = j.find(key); it != j.end()) it->get_to(out);
}
template <class T>
void read_member(const Json& j, const char* key, std::optional<T>& out) {
  if (const auto it = j.find(key); it != j.end() && !it->is_null()) out = it->template get<T>();
}
// JSON has no NaN or infinity: a writer puts null there, which reads as the default.
inline void read_member(const Json& j, const char* key, double& out) {
  if (const auto it = j.find(key); it != j.end() && !it->is_null()) it->get_to(out);
}

}  // namespace shoal::control

// NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT for control::Json: 3.11.2's macro defines the
// conversions for nlohmann::json only. Every member is written in the order named; a member missing from
// a document keeps the default of a value-initialised Type. Use it in a .cpp file, in Type's namespace,
// after declaring to_json and from_json in the header.
#define SHOAL_JSON_MEMBERS(Type, ...)                                                       \
  void to_json(::shoal::control::Json& nlohmann_json_j, const Type& nlohmann_json_t) {      \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__))                \
  }                                                                                         \
  void from_json(const ::shoal::control::Json& nlohmann_json_j, Type& nlohmann_json_t) {    \
    const Type nlohmann_json_default_obj{};                                                 \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_FROM_WITH_DEFAULT, __VA_ARGS__)) \
  }
