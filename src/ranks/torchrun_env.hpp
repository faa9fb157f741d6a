// The environment a worker started by shoal receives, under the names torchrun uses, so that
// training scripts written for torchrun run unchanged. A pure function of the RankTable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "ranks/rank_table.hpp"

namespace shoal::ranks {

// What CUDA_VISIBLE_DEVICES says. torchrun itself never sets it.
enum class DeviceVisibility {
  // The slot's own device only (device list[slot], or the slot index). The worker then sees exactly
  // one GPU, as cuda:0; a script that calls set_device(LOCAL_RANK) must not be combined with this.
  one_per_slot,
  // Every device of the member (the list joined by commas, or 0..slots-1), as torchrun leaves it:
  // scripts pick theirs with set_device(LOCAL_RANK).
  all_of_member,
  // Leave CUDA_VISIBLE_DEVICES out: the inherited value, if any, stands.
  inherit,
};

struct TorchrunSettings {
  // MASTER_PORT: the job's configured port, the same on every host, so that whichever host holds
  // rank 0 after a view change, every worker finds its store there. 1..65535.
  uint16_t master_port = 29500;
  uint32_t restart_count = 0;   // TORCHELASTIC_RESTART_COUNT: restarts of the workers so far
  uint32_t max_restarts = 0;    // TORCHELASTIC_MAX_RESTARTS
  std::string run_id = "none";  // TORCHELASTIC_RUN_ID (torchrun's --rdzv-id default is "none")
  std::string role_name = "default";
  DeviceVisibility devices = DeviceVisibility::one_per_slot;
  // Physical device ids of this member, indexed by slot (e.g. parsed from Slurm's
  // CUDA_VISIBLE_DEVICES); empty means the slot index is the device id. When not empty it needs at
  // least one entry per slot.
  std::vector<std::string> device_ids;
};

using EnvVar = std::pair<std::string, std::string>;

// The variables for (member, slot), in this order: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID, then
// CUDA_VISIBLE_DEVICES unless inherited. With one role, ROLE_RANK = RANK and ROLE_WORLD_SIZE =
// WORLD_SIZE. Fails for an unknown member or slot, port 0, empty run id or role name, or too few
// device ids.
Result<std::vector<EnvVar>> torchrun_env(const RankTable& table, std::string_view member, uint32_t slot,
                                         const TorchrunSettings& settings);

}  // namespace shoal::ranks
