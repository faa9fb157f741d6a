// `shoal members` for people: the `members` reply rendered as an aligned table.
#pragma once

#include <string>

#include "control/replies/members.hpp"

namespace shoal::cli {

// One row per member (self marked), then the refused inputs on one line.
std::string render_members_table(const control::MembersReply& reply);

}  // namespace shoal::cli
