// The `view` control reply: the committed view, the keeper's status and the ranks derived from the
// view, as JSON; and its rendering for people (`shoal view`).
#pragma once

#include <string>

#include "base/result.hpp"
#include "control/json_reader.hpp"
#include "membership/config.hpp"
#include "membership/view.hpp"

namespace shoal::daemon {

// {"self", "epoch", "hash", "status", "reason", "world_size", "live_of_view", "in_view",
//  "members": [{"name","host","addr","slots","join_epoch","generation"}],
//  "ranks": [{"rank","local_rank","node_rank","name","slot"}]}
std::string view_json(const std::string& self, const membership::View& view, const membership::KeeperStatus& status);

Result<std::string> render_view_table(const control::JsonValue& doc);

}  // namespace shoal::daemon
