// shoal.Session: start an embedded agent or connect to this host's `shoal agent`, follow its views,
// get the communicator of the current one, leave. Usable as a context manager (leaves at exit).
#include "shoal/session.hpp"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "py_session.hpp"
#include "python_callbacks.hpp"
#include "session_options.hpp"
#include "shoal/run_report.hpp"

namespace shoal::python {
namespace {

// Session.start's text: what it does, then every keyword with its default.
const std::string& start_doc() {
  static const std::string doc = [] {
    std::string d =
        "start(**options) -> Session\n\nStarts the agent in this process and joins the job. The keywords are "
        "SessionOptions' fields (include/shoal/session.hpp says what each means); durations in seconds. Raises "
        "shoal.Error with what to change, TypeError for an unknown keyword.\n\nKeywords and defaults:\n";
    for (const auto& [k, v] : session_option_defaults()) {
      d += "  " + std::string(py::str(k)) + "=" + std::string(py::repr(v)) + "\n";
    }
    return d;
  }();
  return doc;
}

void apply_timeouts(SessionOptions& o, double view_timeout, double rendezvous_timeout, double collective_timeout) {
  o.view_timeout = milliseconds_from(view_timeout, "view_timeout");
  o.rendezvous_timeout = milliseconds_from(rendezvous_timeout, "rendezvous_timeout");
  o.collective_timeout = milliseconds_from(collective_timeout, "collective_timeout");
}

}  // namespace

void bind_session(py::module_& m) {
  py::class_<PySession, std::shared_ptr<PySession>>(
      m, "Session",
      "A trainer's handle on the job: Session.start(...) runs the agent inside this process (one trainer "
      "per host); Session.connect() follows this host's `shoal agent` (one trainer per GPU slot).")
      .def_static(
          "start",
          [](py::args args, py::kwargs kwargs) {
            if (!args.empty()) throw py::type_error("Session.start takes keywords only (Session.option_names())");
            SessionOptions o;
            apply_session_options(o, kwargs);
            auto s = std::make_shared<PySession>();
            py::gil_scoped_release release;
            s->session = Session::start(o);
            return s;
          },
          start_doc().c_str())
      .def_static(
          "option_names", [] { return session_option_names(); },
          "The keywords Session.start takes: every field of SessionOptions (include/shoal/session.hpp), in order.")
      .def_static("option_defaults", &session_option_defaults,
                  "{keyword: default} of Session.start (durations in seconds).")
      .def_static(
          "connect",
          [](std::string control_path, std::optional<uint32_t> slot, std::string backend, int cuda_device,
             std::string log_spec, double view_timeout, double rendezvous_timeout, double collective_timeout) {
            SessionOptions o;
            o.control_path = std::move(control_path);
            if (slot) o.slot = *slot;
            o.backend = std::move(backend);
            o.cuda_device = cuda_device;
            o.log_spec = std::move(log_spec);
            apply_timeouts(o, view_timeout, rendezvous_timeout, collective_timeout);
            auto s = std::make_shared<PySession>();
            py::gil_scoped_release release;
            s->session = Session::connect(o);
            return s;
          },
          py::kw_only(), py::arg("control_path") = "", py::arg("slot") = py::none(), py::arg("backend") = "gloo",
          py::arg("cuda_device") = -1, py::arg("log_spec") = "", py::arg("view_timeout") = 120.0,
          py::arg("rendezvous_timeout") = 30.0, py::arg("collective_timeout") = 300.0,
          "Follows this host's `shoal agent`: its control socket and slot from the arguments, else from "
          "SHOAL_CONTROL and SHOAL_SLOT (which `shoal agent -- COMMAND` sets for its workers).")
      .def_property_readonly("latest_epoch",
                             [](const PySession& s) {
                               py::gil_scoped_release release;
                               return s.get().latest_epoch();
                             })
      .def_property_readonly(
          "drain_requested", [](const PySession& s) { return s.get().drain_requested(); },
          "True once this host was asked to drain (`shoal drain`, a spot notice, SIGTERM with --drain-on-sigterm): "
          "leave at a step boundary (shoal.DrainRule; the elastic wrappers check it between steps).")
      .def(
          "report_drained",
          [](const PySession& s, uint64_t step) {
            py::gil_scoped_release release;
            s.get().report_drained(step);
          },
          py::arg("step"),
          "This rank has drained: the checkpoint of `step` is held by a peer (or the wait gave up). The agent "
          "leaves once every rank of its host said so.")
      .def(
          "report_run",
          [](const PySession& s, const std::map<std::string, double>& figures) {
            const std::vector<std::pair<std::string, double>> list(figures.begin(), figures.end());
            py::gil_scoped_release release;
            RunReport::send(s.get(), list);
          },
          py::arg("figures"),
          "Tells the agent what this rank's run lost so far ({key: number}, the keys of run_report_keys(): "
          "shoal.torch.ElasticStats.as_dict()); it keeps each local rank's latest report for `shoal status` and its "
          "/metrics (shoal_trainer_*). Does not wait for the agent. Raises shoal.Error for an unknown key or a "
          "value out of range.")
      .def_static(
          "run_report_keys", [] { return RunReport::keys(); },
          "The figures report_run takes, in the agent's order (shoal/run_report.hpp).")
      .def(
          "wait_for_view",
          [](const PySession& s, uint64_t after_epoch, double timeout) {
            const auto ms = milliseconds_from(timeout, "timeout");
            py::gil_scoped_release release;
            return s.get().wait_for_view(after_epoch, ms);
          },
          py::arg("after_epoch") = 0, py::arg("timeout") = 120.0,
          "Blocks until a committed view newer than after_epoch includes this member; returns its RankInfo. "
          "Raises shoal.Timeout.")
      .def(
          "communicator",
          [](const PySession& s) {
            py::gil_scoped_release release;
            return s.get().communicator();
          },
          "The communicator of the newest view that includes this rank, built if needed (blocks until such "
          "a view exists). Raises ViewChanged if the view changes while building: call again.")
      .def(
          "ranks",
          [](const PySession& s) {
            py::gil_scoped_release release;
            return s.get().ranks();
          },
          "The RankInfo of the communicator communicator() last returned.")
      .def(
          "on_view_change",
          [](PySession& s, py::function callback) {
            // Called on the agent's thread with the GIL, never after leave() or at interpreter exit.
            auto cb = held_callback(std::move(callback));
            std::weak_ptr<bool> alive = s.alive;
            auto call = [cb, alive](uint64_t epoch) {
              CallbackGate::Pass pass;  // never once the interpreter is leaving (python_callbacks.hpp)
              if (!pass.open()) return;
              py::gil_scoped_acquire gil;
              const auto a = alive.lock();
              if (!a || !*a) return;
              try {
                (*cb)(epoch);
              } catch (py::error_already_set& e) {
                e.discard_as_unraisable("shoal: on_view_change callback");
              }
            };
            py::gil_scoped_release release;
            s.get().on_view_change(std::move(call));
          },
          py::arg("callback"), "callback(epoch) for every committed view, on the agent's thread; keep it short.")
      .def("leave", &PySession::leave,
           "Leaves the job (embedded: the others commit a view without this host at once; connected: "
           "disconnects).")
      .def_property_readonly("address",
                             [](const PySession& s) {
                               py::gil_scoped_release release;
                               return s.get().address();
                             })
      .def(
          "state_seal",
          [](const PySession& s, Communicator& comm, int sender, py::bytes data) {
            const std::string d = data;
            std::vector<std::byte> seal;
            {
              py::gil_scoped_release release;
              seal = s.get().state_seal(comm, sender, std::as_bytes(std::span(d.data(), d.size())));
            }
            return py::bytes(reinterpret_cast<const char*>(seal.data()), seal.size());
          },
          py::arg("comm"), py::arg("sender"), py::arg("data"),
          "The seal a rank sends with state it hands the others over the trainers' own connections: bound to "
          "comm's view, its attempt and the sender, under a key derived from the cluster key (b'' without one).")
      .def(
          "state_seal_valid",
          [](const PySession& s, Communicator& comm, int sender, py::bytes data, py::bytes seal) {
            const std::string d = data, k = seal;
            py::gil_scoped_release release;
            return s.get().state_seal_valid(comm, sender, std::as_bytes(std::span(d.data(), d.size())),
                                            std::as_bytes(std::span(k.data(), k.size())));
          },
          py::arg("comm"), py::arg("sender"), py::arg("data"), py::arg("seal"),
          "Whether `seal` is sender's seal on `data` (checked before a byte of it is parsed).")
      .def("__enter__", [](std::shared_ptr<PySession> s) { return s; })
      .def("__exit__", [](PySession& s, py::args) {
        s.leave();
        return false;
      });
}

}  // namespace shoal::python
