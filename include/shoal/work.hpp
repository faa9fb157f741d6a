// Work: a communicator operation submitted to run in the background (Communicator::submit and the
// *_async calls). A communicator runs its submitted operations one at a time, in submission order, on a
// thread of its own, so every rank that submits the same sequence runs the same collectives in the same
// order while the caller goes on computing. A view change fails the operation in flight and every later
// one with ViewChanged, as for the blocking calls.
#pragma once

#include <chrono>
#include <exception>
#include <functional>

#include "shoal/api.hpp"

namespace shoal {

class SHOAL_API Work {
 public:
  virtual ~Work() = default;

  // Whether the operation finished, successfully or not.
  virtual bool done() const = 0;
  // Blocks until the operation finished or `timeout` passed; false at the timeout. Rethrows what the
  // operation threw (ViewChanged, Timeout, Error) once it finished with an error.
  virtual bool wait_for(std::chrono::milliseconds timeout) = 0;
  // Blocks until the operation finished; rethrows its error.
  void wait();
  // The operation's error once it finished with one; null before it finished and after a success.
  virtual std::exception_ptr error() const = 0;
  // Calls `callback(error)` once the operation finished (error null on success): on the communicator's
  // thread that finished it, before wait() returns, or at once on the calling thread when it already
  // finished. Keep it short; an exception it throws is logged and dropped.
  virtual void on_done(std::function<void(std::exception_ptr error)> callback) = 0;
};

}  // namespace shoal
