// How much shared memory checkpoints may take by default: a share of the filesystem behind /dev/shm, so
// that replicas (which the agent takes in on a peer's behalf) never fill the memory trainers and the
// system need, without an operator having to choose a number first.
#pragma once

#include <cstdint>
#include <string>

namespace shoal::ckpt {

// The share of /dev/shm's size that the default budget is.
inline constexpr uint32_t kDefaultBudgetPercent = 50;

// `percent` of the size of the filesystem holding `dir`; 0 (no limit) when it cannot be read.
uint64_t default_budget_bytes(const std::string& dir = "/dev/shm", uint32_t percent = kDefaultBudgetPercent);

}  // namespace shoal::ckpt
