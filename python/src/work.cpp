// shoal.Work and the asynchronous operations of shoal.Communicator: each returns a Work at once and runs on
// the communicator's own thread, in submission order (send/recv: posted at once on Gloo). Addresses are
// tensors' data_ptr() values; the caller keeps the memory alive and untouched until the Work is done
// (shoal.torch.ProcessGroup holds the tensors in the Work's completion callback).
//
// stream: None, or a cudaStream_t as an int (torch.cuda.current_stream().cuda_stream): an NCCL operation
// then starts on the device after the work queued on that stream so far (0, the legacy default stream,
// included). Ignored by Gloo.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <optional>

#include "bindings.hpp"
#include "python_callbacks.hpp"
#include "shoal/communicator.hpp"
#include "shoal/work.hpp"

namespace shoal::python {
namespace {

void* pointer_at(uintptr_t a) { return reinterpret_cast<void*>(a); }

// cudaStreamLegacy: what a stream handle of 0 means to CUDA's runtime API here.
void* stream_handle(const std::optional<uintptr_t>& stream) {
  if (!stream) return nullptr;
  return *stream == 0 ? reinterpret_cast<void*>(uintptr_t{1}) : reinterpret_cast<void*>(*stream);
}

using Op = std::function<void(Communicator&)>;

std::shared_ptr<Work> submit(Communicator& c, Op op, const std::optional<uintptr_t>& stream) {
  void* s = stream_handle(stream);
  py::gil_scoped_release release;
  return c.submit(std::move(op), s);
}

// A Python object held from C++ (taken with the GIL, released with it, from whichever thread drops it last;
// leaked at interpreter exit rather than touched then).
std::shared_ptr<void> hold(py::object obj) {
  return std::shared_ptr<void>(new py::object(std::move(obj)), [](void* p) {
    auto* o = static_cast<py::object*>(p);
    if (_Py_IsFinalizing()) return;
    py::gil_scoped_acquire gil;
    delete o;
  });
}

}  // namespace

void bind_work(py::module_& m) {
  py::class_<Work, std::shared_ptr<Work>>(
      m, "Work",
      "An operation submitted to a Communicator, running on the communicator's thread. A view change fails "
      "it with ViewChanged, as it fails a blocking call.")
      .def("done", &Work::done, py::call_guard<py::gil_scoped_release>(), "Whether it finished, well or not.")
      .def(
          "wait",
          [](Work& w, std::optional<double> timeout) {
            if (!timeout) {
              py::gil_scoped_release release;
              w.wait();
              return true;
            }
            const auto ms = milliseconds_from(*timeout, "timeout");
            py::gil_scoped_release release;
            return w.wait_for(ms);
          },
          py::arg("timeout") = py::none(),
          "Blocks until it finished (or timeout seconds passed: False); raises what it raised.")
      .def(
          "exception",
          [](const Work& w) -> py::object {
            const auto e = w.error();
            return e ? exception_object(e) : py::none();
          },
          "Its exception (shoal.ViewChanged, ...) once it finished with one, else None.")
      .def(
          "on_done",
          [](Work& w, py::function callback) {
            // Called on the communicator's thread (or here, when already done), with the GIL.
            auto cb = held_callback(std::move(callback));
            auto call = [cb](std::exception_ptr error) {
              CallbackGate::Pass pass;  // never once the interpreter is leaving (python_callbacks.hpp)
              if (!pass.open()) return;
              py::gil_scoped_acquire gil;
              try {
                (*cb)(error ? exception_object(error) : py::none());
              } catch (py::error_already_set& e) {
                e.discard_as_unraisable("shoal: Work.on_done callback");
              }
            };
            py::gil_scoped_release release;
            w.on_done(std::move(call));
          },
          py::arg("callback"),
          "callback(exception_or_None) once it finished, on the communicator's thread; keep it short.");
}

void add_async_operations(py::class_<Communicator, std::shared_ptr<Communicator>>& cls) {
  cls.def(
         "allreduce_async",
         [](Communicator& c, uintptr_t addr, size_t count, const std::string& dtype, const std::string& op,
            std::optional<uintptr_t> stream, py::object keep) {
           const auto type = data_type(dtype);
           const auto rop = reduce_op(op);
           if (keep.is_none()) {
             return submit(
                 c, [=](Communicator& x) { x.allreduce(pointer_at(addr), count, type, rop); }, stream);
           }
           auto held = hold(std::move(keep));
           return submit(
               c, [=](Communicator& x) { x.allreduce_in_place(pointer_at(addr), count, type, rop, held); }, stream);
         },
         py::arg("address"), py::arg("count"), py::arg("dtype"), py::arg("op") = "sum", py::arg("stream") = py::none(),
         py::arg("in_place_owner") = py::none(),
         "in_place_owner: the object that owns the memory (the tensor): Gloo then reduces in place, without the "
         "safety copy, and a failure leaves the buffer partly reduced; the owner is held until Gloo is done.")
      .def(
          "broadcast_async",
          [](Communicator& c, uintptr_t addr, size_t nbytes, int root, std::optional<uintptr_t> stream) {
            return submit(
                c, [=](Communicator& x) { x.broadcast(pointer_at(addr), nbytes, root); }, stream);
          },
          py::arg("address"), py::arg("nbytes"), py::arg("root"), py::arg("stream") = py::none())
      .def(
          "allgather_async",
          [](Communicator& c, uintptr_t in, uintptr_t out, size_t bytes_per_rank, std::optional<uintptr_t> stream) {
            return submit(
                c, [=](Communicator& x) { x.allgather(pointer_at(in), pointer_at(out), bytes_per_rank); }, stream);
          },
          py::arg("input_address"), py::arg("output_address"), py::arg("bytes_per_rank"),
          py::arg("stream") = py::none(), "Every rank's input, in rank order, into output.")
      .def(
          "reduce_scatter_async",
          [](Communicator& c, uintptr_t in, uintptr_t out, size_t count, const std::string& dtype,
             const std::string& op, std::optional<uintptr_t> stream) {
            const auto type = data_type(dtype);
            const auto rop = reduce_op(op);
            return submit(
                c, [=](Communicator& x) { x.reduce_scatter(pointer_at(in), pointer_at(out), count, type, rop); },
                stream);
          },
          py::arg("input_address"), py::arg("output_address"), py::arg("count"), py::arg("dtype"),
          py::arg("op") = "sum", py::arg("stream") = py::none(),
          "Input: world_size x count elements; output: this rank's block of count elements of the reduction.")
      .def(
          "all_to_all_async",
          [](Communicator& c, uintptr_t in, uintptr_t out, size_t bytes_per_rank, std::optional<uintptr_t> stream) {
            return submit(
                c, [=](Communicator& x) { x.all_to_all(pointer_at(in), pointer_at(out), bytes_per_rank); }, stream);
          },
          py::arg("input_address"), py::arg("output_address"), py::arg("bytes_per_rank"),
          py::arg("stream") = py::none())
      .def(
          "gather_async",
          [](Communicator& c, uintptr_t in, uintptr_t out, size_t bytes_per_rank, int root,
             std::optional<uintptr_t> stream) {
            return submit(
                c, [=](Communicator& x) { x.gather(pointer_at(in), pointer_at(out), bytes_per_rank, root); }, stream);
          },
          py::arg("input_address"), py::arg("output_address"), py::arg("bytes_per_rank"), py::arg("root"),
          py::arg("stream") = py::none(), "output_address: 0 on ranks other than root.")
      .def(
          "scatter_async",
          [](Communicator& c, uintptr_t in, uintptr_t out, size_t bytes_per_rank, int root,
             std::optional<uintptr_t> stream) {
            return submit(
                c, [=](Communicator& x) { x.scatter(pointer_at(in), pointer_at(out), bytes_per_rank, root); }, stream);
          },
          py::arg("input_address"), py::arg("output_address"), py::arg("bytes_per_rank"), py::arg("root"),
          py::arg("stream") = py::none(), "input_address: 0 on ranks other than root.")
      .def("barrier_async",
           [](Communicator& c) {
             return submit(
                 c, [](Communicator& x) { x.barrier(); }, std::nullopt);
           })
      .def(
          "send_async",
          [](Communicator& c, uintptr_t addr, size_t nbytes, int peer, uint32_t tag) {
            py::gil_scoped_release release;
            return c.send_async(pointer_at(addr), nbytes, peer, tag);
          },
          py::arg("address"), py::arg("nbytes"), py::arg("peer"), py::arg("tag") = 0)
      .def(
          "recv_async",
          [](Communicator& c, uintptr_t addr, size_t nbytes, int peer, uint32_t tag) {
            py::gil_scoped_release release;
            return c.recv_async(pointer_at(addr), nbytes, peer, tag);
          },
          py::arg("address"), py::arg("nbytes"), py::arg("peer"), py::arg("tag") = 0);
}

}  // namespace shoal::python
