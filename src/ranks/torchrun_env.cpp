// torchrun-compatible worker environment for one (member, slot) of a RankTable.
#include "ranks/torchrun_env.hpp"

namespace shoal::ranks {

namespace {

std::string device_of(const TorchrunSettings& s, uint32_t slot) {
  return s.device_ids.empty() ? std::to_string(slot) : s.device_ids[slot];
}

std::string all_devices(const TorchrunSettings& s, uint32_t slots) {
  std::string out;
  for (uint32_t slot = 0; slot < slots; ++slot) {
    if (slot > 0) out += ',';
    out += device_of(s, slot);
  }
  return out;
}

}  // namespace

Result<std::vector<EnvVar>> torchrun_env(const RankTable& table, std::string_view member, uint32_t slot,
                                         const TorchrunSettings& settings) {
  const RankNode* node = table.node_of(member);
  if (node == nullptr) {
    return fail("member '" + std::string(member) + "' holds no ranks in view " + std::to_string(table.epoch()));
  }
  const RankEntry* rank = table.find(member, slot);
  if (rank == nullptr) {
    return fail("member '" + std::string(member) + "' has " + std::to_string(node->slots) + " slots, not slot " +
                std::to_string(slot));
  }
  if (settings.master_port == 0) return fail("MASTER_PORT must be from 1 to 65535, not 0");
  if (settings.run_id.empty()) return fail("TORCHELASTIC_RUN_ID must not be empty");
  if (settings.role_name.empty()) return fail("ROLE_NAME must not be empty");
  if (!settings.device_ids.empty() && settings.device_ids.size() < node->slots) {
    return fail("member '" + std::string(member) + "' has " + std::to_string(node->slots) + " slots but only " +
                std::to_string(settings.device_ids.size()) + " device ids");
  }

  const std::string world = std::to_string(table.world_size());
  std::vector<EnvVar> env = {
      {"RANK", std::to_string(rank->global_rank)},
      {"LOCAL_RANK", std::to_string(rank->local_rank)},
      {"WORLD_SIZE", world},
      {"LOCAL_WORLD_SIZE", std::to_string(rank->local_world_size)},
      {"GROUP_RANK", std::to_string(rank->node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(table.node_count())},
      // One role: the role's ranks are the job's ranks.
      {"ROLE_RANK", std::to_string(rank->global_rank)},
      {"ROLE_WORLD_SIZE", world},
      {"ROLE_NAME", settings.role_name},
      {"MASTER_ADDR", table.master_addr()},
      {"MASTER_PORT", std::to_string(settings.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(settings.restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(settings.max_restarts)},
      {"TORCHELASTIC_RUN_ID", settings.run_id},
  };
  switch (settings.devices) {
    case DeviceVisibility::one_per_slot:
      env.emplace_back("CUDA_VISIBLE_DEVICES", device_of(settings, slot));
      break;
    case DeviceVisibility::all_of_member:
      env.emplace_back("CUDA_VISIBLE_DEVICES", all_devices(settings, node->slots));
      break;
    case DeviceVisibility::inherit:
      break;
  }
  return env;
}

}  // namespace shoal::ranks
