// Every field of shoal::SessionOptions, once: Session.start's keywords are read through this table, and
// session_options.cpp refuses to compile when SessionOptions has a field the table lacks (its fields are
// counted), so the Python API cannot drift from the C++ one. Durations are seconds in Python.
#pragma once

#include <string>
#include <vector>

#include "bindings.hpp"
#include "shoal/session.hpp"

// X(field): in SessionOptions' order.
#define SHOAL_SESSION_OPTIONS(X)                                                                                \
  X(name) X(bind) X(advertise) X(seeds) X(cluster) X(slots) X(slot) X(min_hosts) X(max_hosts) X(control_path) \
  X(log_spec) X(job) X(host) X(ckpt_store) X(ckpt_replicas) X(ckpt_replicate_duty) X(ckpt_dir) X(key_file)    \
  X(insecure) X(leave_on_sigterm) X(evict_stragglers) X(evict_after) X(evict_window) X(evict_hold_down)       \
  X(backend) X(cuda_device) X(view_timeout) X(rendezvous_timeout) X(collective_timeout)

namespace shoal::python {

// The table's field names, in order.
const std::vector<std::string>& session_option_names();
// Sets the fields `kwargs` names (TypeError for a name that is no field, with the valid ones; TypeError or
// ValueError for a value of the wrong type or range).
void apply_session_options(SessionOptions& o, const py::kwargs& kwargs);
// {field: default} of a default-constructed SessionOptions, as Python values.
py::dict session_option_defaults();

}  // namespace shoal::python
