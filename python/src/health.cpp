// shoal.HealthMonitor: node health for Python loops (shoal/health_monitor.hpp): per-step compute and wait,
// the figures' exchange on the job's communicator every few steps, the straggler verdict, and the session's
// agent told it. health() gives the verdict as a dict.
#include <pybind11/stl.h>

#include <memory>

#include "bindings.hpp"
#include "py_session.hpp"
#include "shoal/health_monitor.hpp"

namespace shoal::python {
namespace {

// The monitor and the session it reports through (kept alive while the monitor lives).
struct PyHealthMonitor {
  std::shared_ptr<PySession> session;
  std::unique_ptr<HealthMonitor> monitor;

  HealthMonitor& get() const {
    if (!session->session) throw Error("the session has left");
    return *monitor;
  }
};

py::dict health_dict(const JobHealth& h) {
  py::list hosts;
  for (const auto& x : h.hosts) {
    py::dict d;
    d["name"] = x.name;
    d["compute_ms"] = x.compute_ms;
    d["wait_ms"] = x.wait_ms;
    d["samples"] = x.samples;
    d["straggler"] = x.straggler;
    hosts.append(d);
  }
  py::dict rule;
  rule["factor"] = h.rule.factor;
  rule["min_excess_ms"] = h.rule.min_excess_ms;
  rule["clear_factor"] = h.rule.clear_factor;
  rule["window_steps"] = h.rule.window_steps;
  rule["min_samples"] = h.rule.min_samples;
  rule["raise_after"] = h.rule.raise_after;
  rule["clear_after"] = h.rule.clear_after;
  rule["exchange_every"] = h.rule.exchange_every;
  py::dict out;
  out["epoch"] = h.epoch;
  out["step"] = h.step;
  out["evaluations"] = h.evaluations;
  out["hosts"] = hosts;
  out["stragglers"] = h.stragglers;
  out["dropped_records"] = h.dropped_records;
  out["dropped_figures"] = h.dropped_figures;
  out["forged_records"] = h.forged_records;
  out["authenticated"] = h.authenticated;
  out["rule"] = rule;
  return out;
}

}  // namespace

void bind_health(py::module_& m) {
  py::class_<PyHealthMonitor>(
      m, "HealthMonitor",
      "Node health for a loop of your own (shoal.torch.Elastic uses it): call step_began(comm) and "
      "step_ended(comm) around each step and completed(comm, step) after it, on every rank. Every "
      "exchange_every steps the ranks exchange their compute and wait times on comm and judge stragglers "
      "alike; the session's agent is told (`shoal health`). The keywords are StragglerOptions' fields "
      "(include/shoal/health.hpp).")
      .def(py::init([](std::shared_ptr<PySession> session, double factor, double min_excess_ms, double clear_factor,
                       uint32_t window_steps, uint32_t min_samples, uint32_t raise_after, uint32_t clear_after,
                       uint32_t exchange_every) {
             StragglerOptions o;
             o.factor = factor;
             o.min_excess_ms = min_excess_ms;
             o.clear_factor = clear_factor;
             o.window_steps = window_steps;
             o.min_samples = min_samples;
             o.raise_after = raise_after;
             o.clear_after = clear_after;
             o.exchange_every = exchange_every;
             auto p = std::make_unique<PyHealthMonitor>();
             p->monitor = std::make_unique<HealthMonitor>(session->get(), o);
             p->session = std::move(session);
             return p;
           }),
           py::arg("session"), py::kw_only(), py::arg("factor") = StragglerOptions{}.factor,
           py::arg("min_excess_ms") = StragglerOptions{}.min_excess_ms,
           py::arg("clear_factor") = StragglerOptions{}.clear_factor,
           py::arg("window_steps") = StragglerOptions{}.window_steps,
           py::arg("min_samples") = StragglerOptions{}.min_samples,
           py::arg("raise_after") = StragglerOptions{}.raise_after,
           py::arg("clear_after") = StragglerOptions{}.clear_after,
           py::arg("exchange_every") = StragglerOptions{}.exchange_every)
      .def(
          "step_began", [](PyHealthMonitor& h, Communicator& comm) { h.get().step_began(comm); }, py::arg("comm"),
          "Before a step's work on comm (the session's current communicator).")
      .def(
          "step_ended", [](PyHealthMonitor& h, Communicator& comm) { h.get().step_ended(comm); }, py::arg("comm"),
          "After a step's work on comm.")
      .def(
          "completed",
          [](PyHealthMonitor& h, Communicator& comm, uint64_t step) {
            auto& monitor = h.get();
            py::gil_scoped_release release;
            return monitor.completed(comm, step);
          },
          py::arg("comm"), py::arg("step"),
          "After step `step` completed: exchanges and judges when due (a collective: every rank calls it after "
          "the same steps); True when it did. Raises what collectives raise (ViewChanged).")
      .def(
          "health", [](const PyHealthMonitor& h) { return health_dict(h.get().health()); },
          "The latest verdict: {'epoch', 'step', 'evaluations', 'hosts': [{'name', 'compute_ms', 'wait_ms', "
          "'samples', 'straggler'}], 'stragglers', 'dropped_records', 'dropped_figures', 'forged_records', "
          "'authenticated', 'rule'}; hosts empty before the first exchange of a view.");
}

}  // namespace shoal::python
