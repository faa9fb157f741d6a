// Two real agents on loopback in one cluster, as two hosts of a job: "origin", whose trainer saves, and
// "peer", the host the committed view's replica placement names as origin's holder. The checkpoint
// benchmarks push and fetch as origin's agent does -- with origin's hello, for the rank the view gives
// origin -- so the peer's admission rules (ckpt_service/admission.hpp) take the pushes as they take a
// real replica's, and refuse anything else.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "ckpt_service/transfer.hpp"

namespace shoal::bench {

class ReplicaPair {
 public:
  struct Options {
    std::string job;       // the checkpoint job; segment names start with it
    std::string key_file;  // empty: an open cluster
    std::chrono::milliseconds stall_timeout{60'000};
    std::chrono::milliseconds view_timeout{30'000};  // for the first committed view of both
  };
  // Starts both agents and returns once each has committed one view of both; throws std::runtime_error
  // (saying what did not happen) otherwise.
  explicit ReplicaPair(const Options& options);
  ~ReplicaPair();
  ReplicaPair(const ReplicaPair&) = delete;
  ReplicaPair& operator=(const ReplicaPair&) = delete;

  // Origin's (only) rank in that view, and the view's world size: what origin's trainer saves as.
  uint32_t rank() const { return rank_; }
  uint32_t world() const { return world_; }
  // The peer's address with origin's CKPT_STREAM hello: the connection origin's replication opens.
  ckpt_service::TransferPeer to_peer() const;
  // The segment names the benchmark's own rank store (origin's trainer) saves under. Not the origin
  // agent's store: the benchmark pushes its versions itself, to time each stage, so origin's agent must
  // not find and replicate them on its own.
  std::string trainer_store() const { return job_ + "-origin"; }

 private:
  struct Host;
  std::string job_;
  std::unique_ptr<Host> origin_;
  std::unique_ptr<Host> peer_;
  uint32_t rank_ = 0;
  uint32_t world_ = 0;
};

}  // namespace shoal::bench
