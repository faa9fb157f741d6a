// `shoal members` for people: the `members` JSON document rendered as an aligned table.
#pragma once

#include <string>

#include "base/result.hpp"
#include "control/json_reader.hpp"

namespace shoal::cli {

// Fails when the document does not have the shape members_json() writes.
Result<std::string> render_members_table(const control::JsonValue& doc);

}  // namespace shoal::cli
