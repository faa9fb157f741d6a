// Every reply of the control socket as a typed struct, one header per document under replies/: the
// daemon fills and writes them, the CLI, the connected session and the tests read them back.
#pragma once

#include "control/replies/check.hpp"
#include "control/replies/ckpt_ls.hpp"
#include "control/replies/document.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "control/replies/health.hpp"
#include "control/replies/members.hpp"
#include "control/replies/session.hpp"
#include "control/replies/stats.hpp"
#include "control/replies/status.hpp"
#include "control/replies/view.hpp"
