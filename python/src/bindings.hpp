// The pieces of the `shoal._shoal` extension module, one function per part of libshoal's public API.
// Every call that can block or take a lock of libshoal releases the GIL; callbacks into Python take it.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include "shoal/communicator.hpp"

namespace shoal::python {

namespace py = pybind11;

void bind_errors(py::module_& m);        // errors.cpp: Error, Timeout, ViewChanged
void bind_communicator(py::module_& m);  // communicator.cpp: RankInfo, Communicator
void bind_session(py::module_& m);       // session.cpp: Session (start, connect, views)
void bind_checkpoints(py::module_& m);   // checkpoints.cpp: saves, restores, copies with checksums
void bind_store(py::module_& m);         // store.cpp: EpochStore, Session.store
void bind_health(py::module_& m);        // health.cpp: HealthMonitor (node health for Python loops)
void bind_settle(py::module_& m);        // settle.cpp: SettleRule, SettleFacts, SettleDecision

// An instance of shoal.Error, shoal.Timeout or shoal.ViewChanged (with .epoch) for what `error` holds
// (RuntimeError for other exceptions). Needs the GIL.
py::object exception_object(std::exception_ptr error);
// Whether a Python exception is a shoal.VersionRefused. Needs the GIL.
bool is_version_refused(const py::error_already_set& e);
// Work and the asynchronous operations of Communicator (work.cpp), added to the class bind_communicator made.
void bind_work(py::module_& m);
void add_async_operations(py::class_<Communicator, std::shared_ptr<Communicator>>& cls);

// "sum", "avg", "min", "max" and the element type names ("float32" or "f32", ...); py::value_error otherwise.
ReduceOp reduce_op(const std::string& op);
DataType data_type(const std::string& name);

// Seconds (a float, as Python APIs take them) to milliseconds; refuses negative and non-finite values.
std::chrono::milliseconds milliseconds_from(double seconds, const char* what);

}  // namespace shoal::python
