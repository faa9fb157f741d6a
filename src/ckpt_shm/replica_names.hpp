// The names of replica segments: the versions a host holds of other hosts' ranks, one object per
// (rank, step), next to the host's own slot segments ("/shoal.<job>.r<rank>.v<slot>").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace shoal::ckpt {

// "/shoal.<job>.p<rank>.s<step>", e.g. "/shoal.llama-7b.p3.s12000" (-> /dev/shm/shoal.llama-7b.p3.s12000).
// 'p' (peer) rather than 'r' keeps "shoal.<job>.p" a prefix that names the replicas and nothing else,
// so a scan of /dev/shm never mistakes a local slot for a replica or the other way round.
// Fails for an invalid job name (see check_job_name).
Result<std::string> replica_segment_name(std::string_view job, uint32_t rank, uint64_t step);

// The file-name prefix, without the leading '/', shared by every replica segment of `job`.
std::string replica_file_prefix(std::string_view job);

// "/shoal.<job>.p<rank>.spare": the memory of a rank's dropped replica, kept mapped (pages in memory)
// for that rank's next receive. Never a version: a scan for replicas skips it (".spare" is no step).
Result<std::string> spare_segment_name(std::string_view job, uint32_t rank);
// Whether a file name of /dev/shm (with or without its leading '/') is a spare of `job`.
bool is_spare_segment_name(std::string_view name, std::string_view job);

struct ReplicaName {
  std::string job;
  uint32_t rank = 0;
  uint64_t step = 0;
};

// Parses a replica segment name, with or without its leading '/' (directory entries of /dev/shm
// have none). Only the canonical spelling parses (decimal, no sign, no leading zeros), so exactly
// one name stands for each (job, rank, step). nullopt for anything else: slot segments, other
// programs' objects, out-of-range numbers.
std::optional<ReplicaName> parse_replica_segment_name(std::string_view name);

}  // namespace shoal::ckpt
