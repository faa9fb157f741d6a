// CheckpointPersister: the agent's optional copy of each local rank's newest checkpoint version in a
// directory (--ckpt-dir), so that a job outlives losing every host's memory at once (a power cut, a
// scheduler that ends the whole allocation). It runs on a thread of its own: a save never waits for a
// disk. Per rank only the newest commit is queued; one in flight finishes (cancelling it for a newer
// one would starve the disk whenever saves come faster than it writes). When the agent leaves
// (SIGTERM), flush() queues every local rank's newest version not yet on disk, and the agent waits for
// the queue to drain before it exits.
#pragma once

#include <atomic>
#include <functional>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/persist_dir.hpp"
#include "ckpt_shm/segment_trust.hpp"

namespace shoal::ckpt_service {

class CheckpointPersister {
 public:
  // `store`: this host's segment names, where the local versions are found, written by whom `owners`
  // says at the time (it may change: CheckpointService::trust_slot_writer).
  // `store` names the segments to persist from (empty: none yet, see CheckpointConfig::store_by_lineage).
  CheckpointPersister(ckpt::PersistDir dir, std::function<std::string()> store,
                      std::function<ckpt::SegmentOwners()> owners);
  ~CheckpointPersister();
  CheckpointPersister(const CheckpointPersister&) = delete;
  CheckpointPersister& operator=(const CheckpointPersister&) = delete;

  void start();
  // Cancels the write in flight (its temporary file is removed), drops the queue and joins.
  void stop();

  // A local rank sealed `step`: queue it (replacing an older queued step of that rank). Returns at once.
  void committed(uint32_t rank, uint64_t step);
  // Queues the newest sealed version of every local rank that the directory does not hold yet.
  void flush();
  // Whether a version is queued or being written.
  bool busy() const;

  const ckpt::PersistDir& dir() const { return dir_; }

 private:
  void loop();
  void persist(uint32_t rank, uint64_t step);

  ckpt::PersistDir dir_;
  std::function<std::string()> store_;
  // What store_ holds in /dev/shm now; nothing while it names none.
  std::vector<ckpt::HeldSegment> held_now() const;
  std::function<ckpt::SegmentOwners()> owners_;
  std::atomic<bool> cancel_{false};

  mutable std::mutex mu_;  // everything below
  std::condition_variable wake_;
  std::map<uint32_t, uint64_t> pending_;  // rank -> newest step to persist
  bool writing_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace shoal::ckpt_service
