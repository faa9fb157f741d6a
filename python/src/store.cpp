// shoal.EpochStore: the key-value store of one committed view (Session.store(comm)), for frameworks
// that bootstrap from a store (shoal.torch.Store wraps it as a torch.distributed.Store). Every call
// runs without the GIL.
#include <pybind11/stl.h>

#include <cstring>
#include <memory>

#include "bindings.hpp"
#include "py_session.hpp"
#include "shoal/store.hpp"

namespace shoal::python {
namespace {

// The store, and the session it came from: the store may not outlive it.
struct PyEpochStore {
  std::shared_ptr<PySession> owner;
  std::unique_ptr<EpochStore> store;
};

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

void bind_store(py::module_& m) {
  py::class_<PyEpochStore, std::shared_ptr<PyEpochStore>>(
      m, "EpochStore",
      "The key-value store of one committed view, served by the agents: empty for every new view, and "
      "every call raises ViewChanged once the view is superseded or loses a member. Values are bytes; "
      "counters (add) are decimal text. Timeouts in seconds.")
      .def_property_readonly("epoch", [](const PyEpochStore& s) { return s.store->epoch(); })
      .def_property_readonly("attempt", [](const PyEpochStore& s) { return s.store->attempt(); })
      .def(
          "set",
          [](PyEpochStore& s, const std::string& key, const py::bytes& value) {
            std::string v = value;
            py::gil_scoped_release release;
            s.store->set(key, bytes_of(v));
          },
          py::arg("key"), py::arg("value"))
      .def(
          "get",
          [](PyEpochStore& s, const std::string& key, double timeout) {
            const auto ms = milliseconds_from(timeout, "timeout");
            std::vector<std::byte> v;
            {
              py::gil_scoped_release release;
              v = s.store->get(key, ms);
            }
            return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
          },
          py::arg("key"), py::arg("timeout") = 300.0, "Waits for the key; raises shoal.Timeout.")
      .def(
          "add",
          [](PyEpochStore& s, const std::string& key, int64_t delta) {
            py::gil_scoped_release release;
            return s.store->add(key, delta);
          },
          py::arg("key"), py::arg("delta"))
      .def(
          "wait_for_change",
          [](PyEpochStore& s, const std::string& key, int64_t seen, double timeout) {
            const auto ms = milliseconds_from(timeout, "timeout");
            py::gil_scoped_release release;
            return s.store->wait_for_change(key, seen, ms);
          },
          py::arg("key"), py::arg("seen"), py::arg("timeout"),
          "The counter once it differs from `seen`, or as it is after `timeout`.")
      .def(
          "check",
          [](PyEpochStore& s, const std::vector<std::string>& keys) {
            py::gil_scoped_release release;
            return s.store->check(keys);
          },
          py::arg("keys"))
      .def(
          "remove",
          [](PyEpochStore& s, const std::string& key) {
            py::gil_scoped_release release;
            return s.store->remove(key);
          },
          py::arg("key"))
      .def("num_keys",
           [](PyEpochStore& s) {
             py::gil_scoped_release release;
             return s.store->num_keys();
           })
      .def(
          "wait",
          [](PyEpochStore& s, const std::vector<std::string>& keys, double timeout) {
            const auto ms = milliseconds_from(timeout, "timeout");
            py::gil_scoped_release release;
            s.store->wait(keys, ms);
          },
          py::arg("keys"), py::arg("timeout") = 300.0);

  auto session = py::reinterpret_borrow<py::class_<PySession, std::shared_ptr<PySession>>>(m.attr("Session"));
  session.def(
      "store",
      [](std::shared_ptr<PySession> s, Communicator& comm) {
        auto out = std::make_shared<PyEpochStore>();
        out->owner = s;
        py::gil_scoped_release release;
        out->store = s->get().store(comm);
        return out;
      },
      py::arg("comm"),
      "The EpochStore of comm's view. Raises ViewChanged when comm is not the session's current communicator.");
}

}  // namespace shoal::python
