// Parsing of control request lines and dispatch to registered handlers.
#include "agent/control_handlers.hpp"

#include <exception>

#include "agent/json_writer.hpp"

namespace shoal::agent {

void ControlHandlers::add(std::string name, std::string summary, Handler handler) {
  for (auto& e : entries_) {
    if (e.name == name) {
      e.summary = std::move(summary);
      e.handler = std::move(handler);
      return;
    }
  }
  entries_.push_back({std::move(name), std::move(summary), std::move(handler)});
}

std::string ControlHandlers::error_reply(std::string_view message) const {
  JsonWriter w;
  w.begin_object().key("error").value(message).key("requests").begin_array();
  for (const auto& e : entries_) w.value(e.name);
  w.end_array().end_object();
  return w.str();
}

std::string ControlHandlers::dispatch(std::string_view line) const {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kMaxControlRequestBytes)
    return error_reply("request longer than " + std::to_string(kMaxControlRequestBytes) + " bytes");
  std::vector<std::string> words;
  std::string word;
  for (char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ' ' || c == '\t') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
      continue;
    }
    if (u < 0x21 || u > 0x7E) return error_reply("request contains a byte that is not printable ASCII");
    word += c;
  }
  if (!word.empty()) words.push_back(std::move(word));
  if (words.empty()) return error_reply("empty request");
  for (const auto& e : entries_) {
    if (e.name == words.front()) {
      try {
        return e.handler(std::span<const std::string>(words).subspan(1));
      } catch (const std::exception& ex) {
        return error_reply("request '" + e.name + "' failed: " + ex.what());
      }
    }
  }
  return error_reply("unknown request '" + words.front() + "'");
}

}  // namespace shoal::agent
