// The `view` control reply: the committed view, the keeper's status and the ranks derived from the
// view (control::ViewReply); and its rendering for people (`shoal view`).
#pragma once

#include <string>

#include "base/result.hpp"
#include "control/json_reader.hpp"
#include "control/replies/view.hpp"
#include "membership/config.hpp"
#include "membership/view.hpp"

namespace shoal::daemon {

control::ViewReply view_report(const std::string& self, const membership::View& view,
                               const membership::KeeperStatus& status);

Result<std::string> render_view_table(const control::JsonValue& doc);

}  // namespace shoal::daemon
