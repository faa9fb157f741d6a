// The `view` control reply: the committed view, the keeper's status and the ranks derived from the
// view (control::ViewReply); and its rendering for people (`shoal view`).
#pragma once

#include <string>

#include "control/replies/view.hpp"
#include "membership/config.hpp"
#include "membership/view.hpp"

namespace shoal::daemon {

control::ViewReply view_report(const std::string& self, const membership::View& view,
                               const membership::KeeperStatus& status);

// The view as `shoal view` prints it: a header line, then one row per member with its ranks.
std::string render_view_table(const control::ViewReply& view);

}  // namespace shoal::daemon
