// RankInfo and Communicator. Collectives take any object with the buffer protocol (a NumPy array, a
// tensor's .numpy(), a bytearray) or, for memory Python cannot describe (a CUDA tensor), an address
// and a count; they run with the GIL released.
#include <cstring>
#include <memory>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "shoal/communicator.hpp"
#include "shoal/session.hpp"

namespace shoal::python {

ReduceOp reduce_op(const std::string& op) {
  if (op == "sum") return ReduceOp::sum;
  if (op == "avg") return ReduceOp::avg;
  if (op == "min") return ReduceOp::min;
  if (op == "max") return ReduceOp::max;
  throw py::value_error("op must be sum, avg, min or max, not '" + op + "'");
}

DataType data_type(const std::string& name) {
  if (name == "f32" || name == "float32") return DataType::f32;
  if (name == "f64" || name == "float64") return DataType::f64;
  if (name == "i32" || name == "int32") return DataType::i32;
  if (name == "i64" || name == "int64") return DataType::i64;
  if (name == "bf16" || name == "bfloat16") return DataType::bf16;
  if (name == "f16" || name == "float16") return DataType::f16;
  throw py::value_error("dtype must be float32, float64, int32, int64, bfloat16 or float16, not '" + name + "'");
}

namespace {

// The element type of a buffer, from its struct format and item size.
DataType buffer_type(const py::buffer_info& info) {
  const std::string f = info.format;
  const char c = f.empty() ? '?' : f.back();
  if (c == 'f' && info.itemsize == 4) return DataType::f32;
  if (c == 'd' && info.itemsize == 8) return DataType::f64;
  if ((c == 'i' || c == 'l' || c == 'q') && info.itemsize == 4) return DataType::i32;
  if ((c == 'i' || c == 'l' || c == 'q') && info.itemsize == 8) return DataType::i64;
  if (c == 'e' && info.itemsize == 2) return DataType::f16;
  throw py::type_error("allreduce needs float32, float64, int32, int64 or float16 elements, not format '" + f + "'");
}

// A writable, C-contiguous buffer.
py::buffer_info contiguous(py::buffer& b, bool writable) {
  py::buffer_info info = b.request(writable);
  ssize_t expect = info.itemsize;
  for (ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] > 1 && info.strides[d] != expect) throw py::value_error("the buffer must be C-contiguous");
    expect *= info.shape[d];
  }
  return info;
}

size_t byte_size(const py::buffer_info& info) { return static_cast<size_t>(info.size * info.itemsize); }

void* address(uintptr_t a) { return reinterpret_cast<void*>(a); }

}  // namespace

void bind_communicator(py::module_& m) {
  py::class_<RankInfo>(m, "RankInfo", "This rank's place in a committed view (torchrun's names).")
      .def_readonly("epoch", &RankInfo::epoch)
      .def_readonly("view_hash", &RankInfo::view_hash)
      .def_readonly("rank", &RankInfo::rank, "RANK")
      .def_readonly("world_size", &RankInfo::world_size, "WORLD_SIZE")
      .def_readonly("local_rank", &RankInfo::local_rank, "LOCAL_RANK")
      .def_readonly("local_world_size", &RankInfo::local_world_size, "LOCAL_WORLD_SIZE")
      .def_readonly("node_rank", &RankInfo::node_rank, "GROUP_RANK")
      .def_readonly("node_count", &RankInfo::node_count)
      .def_readonly("master_addr", &RankInfo::master_addr, "MASTER_ADDR: the host of rank 0")
      .def_readonly("members", &RankInfo::members, "member names in rank order of their first slot")
      .def_readonly("attempt", &RankInfo::attempt, "rebuilds of this epoch's communicator with no member lost")
      .def("__repr__", [](const RankInfo& r) {
        return "RankInfo(epoch=" + std::to_string(r.epoch) + ", rank=" + std::to_string(r.rank) +
               ", world_size=" + std::to_string(r.world_size) + ", local_rank=" + std::to_string(r.local_rank) + ")";
      });

  py::class_<Communicator, std::shared_ptr<Communicator>> cls(
      m, "Communicator",
      "The communicator of one committed view. Never repaired, only replaced: once its view changes every "
      "call raises ViewChanged; ask the session for the next one.");
  cls.def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("world_size", &Communicator::world_size)
      .def_property_readonly("epoch", &Communicator::epoch)
      .def_property_readonly("backend", [](const Communicator& c) { return std::string(c.backend()); })
      .def_property_readonly("aborted", &Communicator::aborted)
      .def(
          "allreduce",
          [](Communicator& c, py::buffer b, const std::string& op) {
            auto info = contiguous(b, true);
            const auto type = buffer_type(info);
            const auto rop = reduce_op(op);
            py::gil_scoped_release release;
            c.allreduce(info.ptr, static_cast<size_t>(info.size), type, rop);
          },
          py::arg("buffer"), py::arg("op") = "sum", "In place over a writable, contiguous buffer.")
      .def(
          "allreduce_address",
          [](Communicator& c, uintptr_t addr, size_t count, const std::string& dtype, const std::string& op) {
            const auto type = data_type(dtype);
            const auto rop = reduce_op(op);
            py::gil_scoped_release release;
            c.allreduce(address(addr), count, type, rop);
          },
          py::arg("address"), py::arg("count"), py::arg("dtype"), py::arg("op") = "sum",
          "In place on `count` elements at `address` (a tensor's data_ptr(); device memory for nccl).")
      .def(
          "broadcast",
          [](Communicator& c, py::buffer b, int root) {
            auto info = contiguous(b, true);
            py::gil_scoped_release release;
            c.broadcast(info.ptr, byte_size(info), root);
          },
          py::arg("buffer"), py::arg("root"), "The bytes of `root`'s buffer into everyone's.")
      .def(
          "broadcast_address",
          [](Communicator& c, uintptr_t addr, size_t bytes, int root) {
            py::gil_scoped_release release;
            c.broadcast(address(addr), bytes, root);
          },
          py::arg("address"), py::arg("nbytes"), py::arg("root"))
      .def(
          "allgather",
          [](Communicator& c, py::buffer in, py::buffer out) {
            auto i = contiguous(in, false);
            auto o = contiguous(out, true);
            const size_t per_rank = byte_size(i);
            if (byte_size(o) != per_rank * static_cast<size_t>(c.world_size())) {
              throw py::value_error("allgather: the output holds " + std::to_string(byte_size(o)) +
                                    " bytes, not world_size x " + std::to_string(per_rank));
            }
            py::gil_scoped_release release;
            c.allgather(i.ptr, o.ptr, per_rank);
          },
          py::arg("input"), py::arg("output"), "Every rank's input, in rank order, into output.")
      .def(
          "allgather_address",
          [](Communicator& c, uintptr_t in, uintptr_t out, size_t bytes_per_rank) {
            py::gil_scoped_release release;
            c.allgather(reinterpret_cast<const void*>(in), address(out), bytes_per_rank);
          },
          py::arg("input_address"), py::arg("output_address"), py::arg("bytes_per_rank"),
          "allgather from and into memory Python cannot describe (tensors' data_ptr()).")
      .def("barrier", &Communicator::barrier, py::call_guard<py::gil_scoped_release>())
      .def("abort", &Communicator::abort, py::arg("why"), py::call_guard<py::gil_scoped_release>(),
           "From any thread: calls in flight and later ones raise ViewChanged(why).");
  add_async_operations(cls);
}

}  // namespace shoal::python
