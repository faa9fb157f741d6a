// Fuzz target: the control socket's text. The input is parsed as a JSON document (parse_json) and
// served as a request line (ControlHandlers::dispatch and dispatch_async). Whatever the line, the
// reply must be a JSON document our own reader accepts; a parsed document written out with JsonWriter
// must read back, and reach a fixed point (read and written again, the same text).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "control/handlers.hpp"
#include "control/json_reader.hpp"
#include "control/json_writer.hpp"

namespace {

using namespace shoal::control;

void write(const JsonValue& v, JsonWriter& w) {
  switch (v.kind()) {
    case JsonValue::Kind::null:
      w.null();
      break;
    case JsonValue::Kind::boolean:
      w.value(*v.as_bool());
      break;
    case JsonValue::Kind::number:
      if (auto n = v.as_uint64()) {
        w.value(*n);
      } else {
        w.value(*v.as_double());
      }
      break;
    case JsonValue::Kind::string:
      w.value(*v.as_string());
      break;
    case JsonValue::Kind::array:
      w.begin_array();
      for (const auto& item : v.items()) write(item, w);
      w.end_array();
      break;
    case JsonValue::Kind::object:
      w.begin_object();
      for (const auto& [key, member] : v.members()) {
        if (v.find(key) == nullptr) __builtin_trap();
        w.key(key);
        write(member, w);
      }
      w.end_object();
      break;
  }
}

std::string written(const JsonValue& v) {
  JsonWriter w;
  write(v, w);
  if (!w.complete()) __builtin_trap();
  return w.str();
}

void must_parse(const std::string& document) {
  if (!parse_json(document)) __builtin_trap();
}

const ControlHandlers& handlers() {
  static const ControlHandlers table = [] {
    ControlHandlers h;
    // Echoes its words, so the request's bytes reach the reply.
    h.add("echo", "echo the words", [](std::span<const std::string> args) {
      JsonWriter w;
      w.begin_object().key("args").begin_array();
      for (const auto& a : args) w.value(a);
      w.end_array().end_object();
      return w.str();
    });
    h.add("throw", "a handler that fails", [](std::span<const std::string> args) -> std::string {
      throw std::runtime_error(args.empty() ? std::string("no words") : args.front());
    });
    h.add_async("wait", "answers at once", std::chrono::milliseconds(5),
                [](std::span<const std::string> args, ControlHandlers::Reply reply) {
                  JsonWriter w;
                  w.begin_object().key("words").value(static_cast<uint64_t>(args.size())).end_object();
                  reply(w.str());
                });
    h.add_async("wait-throw", "an async handler that fails", std::chrono::milliseconds(5),
                [](std::span<const std::string> args, const ControlHandlers::Reply&) {
                  throw std::runtime_error(args.empty() ? std::string("no words") : args.front());
                });
    return h;
  }();
  return table;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto doc = parse_json(text)) {
    // The first writing may still change: invalid UTF-8 becomes the escape \ufffd, which reads back as
    // U+FFFD and is then written raw; a number too large for a double becomes null. From the second
    // writing on, the text stays the same.
    auto once = parse_json(written(*doc));
    if (!once) __builtin_trap();
    const std::string twice = written(*once);
    auto again = parse_json(twice);
    if (!again || written(*again) != twice) __builtin_trap();
  }
  (void)parse_json(text, 2);

  must_parse(handlers().dispatch(text));
  int replies = 0;
  const auto wait = handlers().dispatch_async(text, [&](std::string document) {
    ++replies;
    must_parse(document);
  });
  if (wait.has_value() != (replies == 1) || replies > 1) __builtin_trap();
  return 0;
}
