// Checkpoints through the session: begin_save (a CheckpointSave whose buffers are writable memory in
// this host's shared memory), restore (a copy), restore_into (straight into the caller's memory, in one
// verified pass) and wait_checkpoint_safe. Byte copies run with the GIL released.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "shoal/errors.hpp"
#include "py_session.hpp"
#include "shoal/checkpoint.hpp"

namespace shoal::python {
namespace {

// A save in progress; keeps the session alive as long as it lives.
struct PySave {
  std::shared_ptr<PySession> owner;
  std::unique_ptr<CheckpointSave> save;
  uint64_t step = 0;

  CheckpointSave& get() const {
    if (!save) throw Error("the save of step " + std::to_string(step) + " has ended");
    return *save;
  }
};

// One restored buffer, exposed through the buffer protocol (read-only) so a memoryview keeps it alive.
struct RestoredBuffer {
  std::shared_ptr<const RestoredCheckpoint> restored;
  std::span<const std::byte> bytes;
};

std::span<const std::byte> readable(uintptr_t address, size_t nbytes) {
  return {reinterpret_cast<const std::byte*>(address), nbytes};
}

// A placer's destination: None (not wanted), a writable buffer, or (address, nbytes). `keep` holds the
// buffers Python gave until the copy is done.
std::span<std::byte> destination(const py::handle& d, std::vector<py::buffer_info>& keep) {
  if (d.is_none()) return {};
  if (py::isinstance<py::tuple>(d)) {
    auto t = py::reinterpret_borrow<py::tuple>(d);
    if (t.size() != 2) throw py::value_error("a destination tuple is (address, nbytes)");
    return {reinterpret_cast<std::byte*>(t[0].cast<uintptr_t>()), t[1].cast<size_t>()};
  }
  if (PyObject_CheckBuffer(d.ptr()) != 0) {
    keep.push_back(py::reinterpret_borrow<py::buffer>(d).request(true));
    const auto& info = keep.back();
    return {static_cast<std::byte*>(info.ptr), static_cast<size_t>(info.size * info.itemsize)};
  }
  throw py::type_error("a destination is None, a writable buffer or (address, nbytes)");
}

py::list entries_list(const std::vector<RestoredCheckpoint::Entry>& entries) {
  py::list out;
  for (const auto& e : entries) out.append(py::make_tuple(e.name, e.offset, e.size));
  return out;
}

}  // namespace

void bind_checkpoints(py::module_& m) {
  py::class_<PySave, std::shared_ptr<PySave>>(
      m, "CheckpointSave",
      "One save in progress (Session.begin_save). Fill every declared buffer (write, write_address, or the "
      "memoryview of buffer()), then commit(). Leaving a `with` block by an exception abandons it.")
      .def_readonly("step", &PySave::step)
      .def(
          "buffer",
          [](const PySave& s, const std::string& name) {
            auto span = s.get().buffer(name);
            return py::memoryview::from_memory(static_cast<void*>(span.data()), static_cast<ssize_t>(span.size()));
          },
          py::arg("name"), py::keep_alive<0, 1>(),
          "The buffer's writable bytes in shared memory (checksummed at commit).")
      .def(
          "write",
          [](const PySave& s, const std::string& name, py::buffer b) {
            py::buffer_info info = b.request(false);
            const auto bytes = readable(reinterpret_cast<uintptr_t>(info.ptr), static_cast<size_t>(info.size * info.itemsize));
            py::gil_scoped_release release;
            s.get().write(name, bytes);
          },
          py::arg("name"), py::arg("data"),
          "Copies a contiguous buffer of exactly the declared size in, checksumming it in the same pass.")
      .def(
          "write_address",
          [](const PySave& s, const std::string& name, uintptr_t address, size_t nbytes) {
            py::gil_scoped_release release;
            s.get().write(name, readable(address, nbytes));
          },
          py::arg("name"), py::arg("address"), py::arg("nbytes"),
          "write() from host memory Python cannot describe: e.g. a CPU tensor's data_ptr().")
      .def(
          "write_many",
          [](const PySave& s, const std::vector<std::tuple<std::string, uintptr_t, size_t>>& parts) {
            py::gil_scoped_release release;
            for (const auto& [name, address, nbytes] : parts) s.get().write(name, readable(address, nbytes));
          },
          py::arg("parts"), "write_address for each (name, address, nbytes), in one call without the GIL.")
      .def(
          "write_from_device",
          [](const PySave& s, const std::string& name, uintptr_t device_address, uintptr_t cuda_stream) {
            py::gil_scoped_release release;
            s.get().write_from_device(name, reinterpret_cast<const void*>(device_address),
                                      reinterpret_cast<void*>(cuda_stream));
          },
          py::arg("name"), py::arg("device_address"), py::arg("cuda_stream") = 0,
          "GPU hosts: starts an asynchronous copy from CUDA device memory (a tensor's data_ptr() and its "
          "stream's cuda_stream); commit() waits for it.")
      .def(
          "commit",
          [](PySave& s) {
            {
              py::gil_scoped_release release;
              s.get().commit();
            }
            s.save.reset();
          },
          "Seals the version; the agent replicates it in the background.")
      .def("abandon",
           [](PySave& s) {
             if (s.save) s.save->abandon();
             s.save.reset();
           })
      .def("__enter__", [](std::shared_ptr<PySave> s) { return s; })
      .def("__exit__", [](PySave& s, py::handle type, py::handle, py::handle) {
        if (!type.is_none() && s.save) s.save->abandon();
        s.save.reset();
        return false;
      });

  py::class_<RestoredBuffer>(m, "RestoredBuffer", py::buffer_protocol())
      .def_buffer([](RestoredBuffer& b) {
        return py::buffer_info(const_cast<std::byte*>(b.bytes.data()), 1, "B", 1, {static_cast<ssize_t>(b.bytes.size())},
                               {ssize_t{1}}, true);
      });

  py::class_<RestoredCheckpoint, std::shared_ptr<RestoredCheckpoint>>(m, "RestoredCheckpoint",
                                                                       "A version a restore loaded (verified).")
      .def_readonly("step", &RestoredCheckpoint::step)
      .def_readonly("saved_world", &RestoredCheckpoint::saved_world)
      .def_readonly("saved_rank", &RestoredCheckpoint::saved_rank)
      .def_readonly("source", &RestoredCheckpoint::source, "\"local\", or the peer it came from")
      .def_readonly("seconds", &RestoredCheckpoint::seconds)
      .def_property_readonly("entries", [](const RestoredCheckpoint& r) { return entries_list(r.entries); },
                             "[(name, offset, size)] in the order saved")
      .def("has", &RestoredCheckpoint::has, py::arg("name"))
      .def(
          "buffer",
          [](std::shared_ptr<RestoredCheckpoint> r, const std::string& name) {
            const auto bytes = r->buffer(name);
            return py::memoryview(py::cast(RestoredBuffer{r, bytes}));
          },
          py::arg("name"), "The buffer's bytes (read-only memoryview; restore() only).");

  py::class_<RestoreLayout>(m, "RestoreLayout",
                            "What restore_into's placer sees: the version's step, origin and buffers.")
      .def_readonly("step", &RestoreLayout::step)
      .def_readonly("saved_world", &RestoreLayout::saved_world)
      .def_readonly("saved_rank", &RestoreLayout::saved_rank)
      .def_readonly("source", &RestoreLayout::source)
      .def_property_readonly("entries", [](const RestoreLayout& l) { return entries_list(l.entries); })
      .def_property_readonly(
          "first", [](const RestoreLayout& l) { return py::bytes(reinterpret_cast<const char*>(l.first.data()), l.first.size()); },
          "the first buffer's bytes, verified");

  py::class_<RestorePoint>(m, "RestorePoint", "The step Session.agree_restore settled on, and its saved world.")
      .def_readonly("step", &RestorePoint::step)
      .def_readonly("saved_world", &RestorePoint::saved_world)
      .def("__repr__", [](const RestorePoint& p) {
        return "RestorePoint(step=" + std::to_string(p.step) + ", saved_world=" + std::to_string(p.saved_world) + ")";
      });

  auto session = py::reinterpret_borrow<py::class_<PySession, std::shared_ptr<PySession>>>(m.attr("Session"));
  session
      .def(
          "begin_save",
          [](std::shared_ptr<PySession> s, Communicator& comm, uint64_t step,
             const std::vector<std::pair<std::string, uint64_t>>& buffers) {
            std::vector<CheckpointBuffer> specs;
            for (const auto& [name, bytes] : buffers) specs.push_back({name, bytes});
            auto save = std::make_shared<PySave>();
            save->owner = s;
            save->step = step;
            py::gil_scoped_release release;
            save->save = s->get().begin_save(comm, step, specs);
            return save;
          },
          py::arg("comm"), py::arg("step"), py::arg("buffers"),
          "Begins saving this rank's state for `step`: buffers is [(name, nbytes)] (names 1..103 bytes, "
          "unique). Raises ViewChanged when comm is no longer the session's current communicator.")
      .def(
          "prepare_save",
          [](std::shared_ptr<PySession> s, Communicator& comm,
             const std::vector<std::pair<std::string, uint64_t>>& buffers) {
            std::vector<CheckpointBuffer> specs;
            for (const auto& [name, bytes] : buffers) specs.push_back({name, bytes});
            py::gil_scoped_release release;
            s->get().prepare_save(comm, specs);
          },
          py::arg("comm"), py::arg("buffers"),
          "Readies shared memory for a save of these buffers on a thread of the library's, so that the first "
          "save of a size does not write into memory the kernel clears page by page.")
      .def(
          "restore",
          [](std::shared_ptr<PySession> s, Communicator& comm, std::optional<uint32_t> saved_rank) {
            std::optional<RestoredCheckpoint> r;
            {
              py::gil_scoped_release release;
              r = s->get().restore(comm, saved_rank);
            }
            if (!r) return py::object(py::none());
            return py::cast(std::make_shared<RestoredCheckpoint>(std::move(*r)));
          },
          py::arg("comm"), py::arg("saved_rank") = py::none(),
          "Collective: the newest step every rank saved completely, loaded (a copy); None when there is none.")
      .def(
          "restore_into",
          [](std::shared_ptr<PySession> s, Communicator& comm, py::function placer, std::optional<uint32_t> saved_rank) {
            // Declared before the GIL is released, so they are destroyed with it held.
            std::vector<py::buffer_info> keep;
            std::optional<py::error_already_set> raised;
            RestorePlacer place = [&](const RestoreLayout& layout) {
              py::gil_scoped_acquire gil;
              try {
                keep.clear();
                py::object got = placer(py::cast(layout, py::return_value_policy::reference));
                std::vector<std::span<std::byte>> out;
                for (auto d : got) out.push_back(destination(d, keep));
                return out;
              } catch (py::error_already_set& e) {
                std::string what = e.what();
                if (is_version_refused(e)) throw VersionRefused(what);  // this copy only: the restore goes on
                raised.emplace(std::move(e));
                throw std::runtime_error(what);
              }
            };
            std::optional<RestoredCheckpoint> r;
            try {
              py::gil_scoped_release release;
              r = s->get().restore_into(comm, place, saved_rank);
            } catch (const Error&) {
              if (raised) {  // this rank's placer stopped the restore: its own exception, as it was
                raised->restore();
                throw py::error_already_set();
              }
              throw;
            }
            if (!r) return py::object(py::none());
            return py::cast(std::make_shared<RestoredCheckpoint>(std::move(*r)));
          },
          py::arg("comm"), py::arg("placer"), py::arg("saved_rank") = py::none(),
          "Collective, like restore(), but each buffer is copied straight into memory placer(layout) names: "
          "it returns one destination per entry (None, a writable buffer, or (address, nbytes)), verified in "
          "the same pass. An exception in the placer stops the restore on every rank.")
      .def(
          "agree_restore",
          [](std::shared_ptr<PySession> s, Communicator& comm, std::optional<uint64_t> at_most_step) {
            py::gil_scoped_release release;
            return at_most_step ? s->get().agree_restore_at_most(comm, *at_most_step) : s->get().agree_restore(comm);
          },
          py::arg("comm"), py::arg("at_most_step") = py::none(),
          "Collective: the newest step every rank of its saved world completed and whose versions some host "
          "holds (no newer than at_most_step when given, the same on every rank), as a RestorePoint (.step, "
          ".saved_world); None when there is none. read_ranges and version_buffers then read any saved rank's "
          "version of it, not collectively.")
      .def(
          "version_buffers",
          [](std::shared_ptr<PySession> s, uint64_t step, uint32_t saved_rank) {
            std::vector<RestoredCheckpoint::Entry> entries;
            {
              py::gil_scoped_release release;
              entries = s->get().version_buffers(step, saved_rank);
            }
            std::vector<std::pair<std::string, uint64_t>> out;
            for (const auto& e : entries) out.emplace_back(e.name, e.size);
            return out;
          },
          py::arg("step"), py::arg("saved_rank"),
          "[(name, nbytes)] of saved rank saved_rank's version of step (a step agree_restore returned), in "
          "saved order: from this host's memory, else from a host that holds it.")
      .def(
          "read_ranges",
          [](std::shared_ptr<PySession> s, uint64_t step, uint32_t saved_rank,
             const std::vector<std::tuple<std::string, uint64_t, uint64_t, uintptr_t>>& ranges) {
            std::vector<ByteRange> wanted;
            wanted.reserve(ranges.size());
            for (const auto& [name, offset, bytes, address] : ranges) {
              wanted.push_back({name, offset, bytes, reinterpret_cast<std::byte*>(address)});
            }
            py::gil_scoped_release release;
            return s->get().read_ranges(step, saved_rank, wanted);
          },
          py::arg("step"), py::arg("saved_rank"), py::arg("ranges"),
          "Copies byte ranges [(buffer_name, offset, nbytes, dest_address)] of saved rank saved_rank's version "
          "of step into the caller's memory (each dest_address must have nbytes writable bytes): local memory "
          "first, else the holders agree_restore found; only the 64 KiB chunks covering the ranges cross the "
          "network, each verified before a byte reaches the destination. Returns the source ('local' or the "
          "holder's name). Raises shoal.Error for an unknown buffer or a range outside it (nothing read), "
          "shoal.VersionRefused when every copy failed verification.")
      .def(
          "wait_checkpoint_safe",
          [](const PySession& s, uint64_t step, double timeout) {
            const auto ms = milliseconds_from(timeout, "timeout");
            py::gil_scoped_release release;
            return s.get().wait_checkpoint_safe(step, ms);
          },
          py::arg("step"), py::arg("timeout") = 60.0,
          "Blocks until this session's newest save (of `step` or newer) is held by the peers placement names "
          "and, with a persist directory, written there. False at timeout.")
      .def_property_readonly(
          "checkpoint_replicas", [](const PySession& s) { return s.get().checkpoint_replicas(); },
          "Peer hosts that keep a copy of each checkpoint version this session saves (the agent's "
          "--ckpt-replicas, or Session.start's ckpt_replicas); None when the agent does not say (an older one).");
}

}  // namespace shoal::python
