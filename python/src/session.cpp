// shoal.Session: start an embedded agent or connect to this host's `shoal agent`, follow its views,
// get the communicator of the current one, leave. Usable as a context manager (leaves at exit).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "bindings.hpp"
#include "py_session.hpp"
#include "shoal/session.hpp"

namespace shoal::python {
namespace {

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
          [](std::string name, std::string bind, std::string advertise, std::vector<std::string> seeds,
             std::string cluster, uint32_t slots, uint32_t min_hosts, uint32_t max_hosts, std::string control_path,
             std::string log_spec, std::string job, std::string host, std::string ckpt_store, uint32_t ckpt_replicas,
             uint32_t ckpt_replicate_duty, std::string ckpt_dir, std::string key_file, bool insecure,
             bool leave_on_sigterm, std::string backend, int cuda_device, double view_timeout,
             double rendezvous_timeout, double collective_timeout) {
            SessionOptions o;
            o.name = std::move(name);
            o.bind = std::move(bind);
            o.advertise = std::move(advertise);
            o.seeds = std::move(seeds);
            o.cluster = std::move(cluster);
            o.slots = slots;
            o.min_hosts = min_hosts;
            o.max_hosts = max_hosts;
            o.control_path = std::move(control_path);
            o.log_spec = std::move(log_spec);
            o.job = std::move(job);
            o.host = std::move(host);
            o.ckpt_store = std::move(ckpt_store);
            o.ckpt_replicas = ckpt_replicas;
            o.ckpt_replicate_duty = ckpt_replicate_duty;
            o.ckpt_dir = std::move(ckpt_dir);
            o.key_file = std::move(key_file);
            o.insecure = insecure;
            o.leave_on_sigterm = leave_on_sigterm;
            o.backend = std::move(backend);
            o.cuda_device = cuda_device;
            apply_timeouts(o, view_timeout, rendezvous_timeout, collective_timeout);
            auto s = std::make_shared<PySession>();
            py::gil_scoped_release release;
            s->session = Session::start(o);
            return s;
          },
          py::kw_only(), py::arg("name") = "", py::arg("bind") = "0.0.0.0:7946", py::arg("advertise") = "",
          py::arg("seeds") = std::vector<std::string>{}, py::arg("cluster") = "", py::arg("slots") = 1,
          py::arg("min_hosts") = 1, py::arg("max_hosts") = 0, py::arg("control_path") = "", py::arg("log_spec") = "",
          py::arg("job") = "", py::arg("host") = "", py::arg("ckpt_store") = "", py::arg("ckpt_replicas") = 1,
          py::arg("ckpt_replicate_duty") = 20, py::arg("ckpt_dir") = "", py::arg("key_file") = "",
          py::arg("insecure") = false, py::arg("leave_on_sigterm") = false, py::arg("backend") = "gloo",
          py::arg("cuda_device") = -1,
          py::arg("view_timeout") = 120.0, py::arg("rendezvous_timeout") = 30.0, py::arg("collective_timeout") = 300.0,
          "Starts the agent in this process and joins the job. The keywords are SessionOptions' fields "
          "(include/shoal/session.hpp); timeouts in seconds. Raises shoal.Error with what to change.")
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
            // Called on the agent's thread: take the GIL, and never after leave() or at interpreter exit.
            // Released with the GIL held, whichever thread drops the last reference.
            std::shared_ptr<py::function> cb(new py::function(std::move(callback)), [](py::function* f) {
              py::gil_scoped_acquire gil;
              delete f;
            });
            std::weak_ptr<bool> alive = s.alive;
            auto call = [cb, alive](uint64_t epoch) {
              if (_Py_IsFinalizing()) return;
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
      .def("__enter__", [](std::shared_ptr<PySession> s) { return s; })
      .def("__exit__", [](PySession& s, py::args) {
        s.leave();
        return false;
      });
}

}  // namespace shoal::python
