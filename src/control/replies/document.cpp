// Writing and reading control documents with nlohmann-json, exceptions kept inside.
#include "control/replies/document.hpp"

namespace shoal::control {

std::string dump_document(const Json& doc) { return doc.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string json_error_text(const std::exception& e) {
  std::string_view text = e.what();
  // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at line 1, ..."
  if (text.starts_with("[json.exception.")) {
    if (const auto end = text.find("] "); end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  return std::string(text);
}

Result<Json> parse_document(std::string_view text, size_t max_depth) {
  bool too_deep = false;
  // The callback sees each array and object as it opens, with the number of those around it; one too
  // deep is dropped unbuilt (parsing itself is iterative) and the document refused afterwards.
  const Json::parser_callback_t bound = [&](int depth, Json::parse_event_t event, Json&) {
    if (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) {
      if (static_cast<size_t>(depth) >= max_depth) too_deep = true;
    }
    return !too_deep;
  };
  try {
    Json doc = Json::parse(text.begin(), text.end(), bound);
    if (too_deep) return fail("JSON nested deeper than " + std::to_string(max_depth) + " levels");
    return doc;
  } catch (const nlohmann::json::exception& e) {
    return fail("not a JSON document: " + json_error_text(e));
  }
}

std::optional<std::string> error_of(const Json& doc) {
  if (!doc.is_object()) return std::nullopt;
  const auto it = doc.find("error");
  if (it == doc.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  return "an error without a message: " + dump_document(*it);
}

void require_object(const Json& j, const char* what) {
  if (!j.is_object()) {
    throw Json::type_error::create(302, std::string(what) + " must be an object, not " + j.type_name(), &j);
  }
}

}  // namespace shoal::control
