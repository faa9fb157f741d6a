// `shoal members` for people: the `members` JSON document rendered as an aligned table.
#pragma once

#include <string>

#include "agent/json_reader.hpp"
#include "base/result.hpp"

namespace shoal::agent {

// Fails when the document does not have the shape members_json() writes.
Result<std::string> render_members_table(const JsonValue& doc);

}  // namespace shoal::agent
