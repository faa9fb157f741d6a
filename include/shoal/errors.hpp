// The exceptions libshoal throws across its public API. Everything inside shoal returns results; a
// trainer gets an exception only where it must stop what it is doing: a collective or rendezvous
// whose world has changed, or one that cannot complete in time.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "shoal/api.hpp"

namespace shoal {

class SHOAL_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The communicator's (or the rendezvous') epoch is no longer current: a member of its view failed or
// left, or a newer view was committed. Roll back to the last consistent state, rebuild, continue.
class SHOAL_API ViewChanged : public Error {
 public:
  ViewChanged(uint64_t epoch, const std::string& why)
      : Error("view of epoch " + std::to_string(epoch) + " changed: " + why), epoch_(epoch) {}
  uint64_t epoch() const { return epoch_; }

 private:
  uint64_t epoch_;
};

// A rendezvous or collective did not complete in time; the message names what was missing.
class SHOAL_API Timeout : public Error {
 public:
  using Error::Error;
};

// Thrown by a RestorePlacer (checkpoint.hpp) about the copy of a version it is shown: its content is not
// to be trusted (a structure that does not parse, or that names what the caller refuses to load). Unlike
// any other throw of a placer, the restore goes on as after a checksum failure: the next holder's copy,
// then an older step.
class SHOAL_API VersionRefused : public Error {
 public:
  using Error::Error;
};

}  // namespace shoal
