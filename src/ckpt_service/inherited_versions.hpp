// Versions an agent finds in /dev/shm when it starts, under a job name that nobody chose for this run
// (the default one): held aside until the first committed view says whether they can be this job's.
//
// Why: without --job (or Slurm's job id), every cluster of one id uses the same job name, so a fresh
// cluster would count, replicate and restore what an unrelated earlier run left on the host. The first
// view tells them apart: a cluster that formed just now (no member of that view joined before it) has
// written nothing yet, so what was there before is another run's and is removed; an agent that joins a
// cluster already running (a restart of this host's agent) adopts it, as the job's own.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ckpt_shm/held_scan.hpp"
#include "membership/view.hpp"

namespace shoal::ckpt_service {

// The first view this agent committed shows a cluster that formed in it: every member joined at that
// epoch. Pure.
bool formed_anew(const membership::View& view);

class InheritedVersions {
 public:
  // At start: holds aside every sealed version in `held`. Thread-safe from here on.
  void record(const std::vector<ckpt::HeldSegment>& held);
  // `held` without the versions held aside (all of it once settled).
  std::vector<ckpt::HeldSegment> without(std::vector<ckpt::HeldSegment> held) const;
  // Whether the first view has been seen.
  bool settled() const;
  // At the first committed view: the versions held aside that belong to another run (to be removed
  // by the caller), or none when they are adopted. Later calls return none.
  std::vector<ckpt::HeldSegment> settle(const membership::View& first);

 private:
  mutable std::mutex mu_;
  bool settled_ = false;
  std::map<std::string, ckpt::HeldSegment> aside_;  // by segment name
};

}  // namespace shoal::ckpt_service
