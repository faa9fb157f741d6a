// Defaults for the agent's flags taken from Slurm's environment, so that
// `srun --ntasks-per-node=1 shoal agent -- train ...` works with no other flag: the job id gives the
// cluster id and checkpoint job name, the step's node list gives the seeds and the expected host count,
// the node name and the GPUs on the node give the member name and slot count. Pure: the environment
// comes in as a map (process_environment() reads the real one), so that tests can pin every branch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "net/host_port.hpp"

namespace shoal::ops {

// The port every agent of a Slurm step binds when --bind is not given, so each finds the others at it.
inline constexpr uint16_t kSlurmPort = 7946;

// The most names one host list may expand to; longer lists are refused before anything is allocated.
inline constexpr uint64_t kMaxHostlistNames = 65536;

// Expands Slurm's compressed host list syntax ("node[01-04,07],gpu5", "r[1-2]n[1-2]") into names, in the
// order given, each name once (first occurrence wins). Zero padding follows the width of each range's
// first number. Whitespace, empty entries, unbalanced, nested or empty brackets, reversed ranges,
// non-digits in a range and lists of more than kMaxHostlistNames names are errors.
Result<std::vector<std::string>> expand_hostlist(std::string_view list);

struct SlurmDefaults {
  bool under_slurm = false;           // SLURM_JOB_ID is set, and a step node list or a job node list
  std::string job_id;                 // SLURM_JOB_ID
  std::string cluster;                // "slurm-" + job id: the gossip cluster id (other jobs' packets are refused)
  std::string job;                    // checkpoint job name: "slurm-" + job id
  std::string name;                   // SLURMD_NODENAME, else empty
  std::vector<std::string> nodes;     // SLURM_STEP_NODELIST expanded, else SLURM_JOB_NODELIST
  std::optional<uint32_t> slots;      // SLURM_GPUS_ON_NODE, else the count of entries in CUDA_VISIBLE_DEVICES
  std::optional<uint32_t> min_hosts;  // SLURM_STEP_NUM_NODES, else SLURM_JOB_NUM_NODES, else SLURM_NNODES,
                                      // else nodes.size()
  std::vector<std::string> notes;     // one line per value taken from the environment, for the agent's log
};

using Environment = std::map<std::string, std::string>;

// Reads only `env`. A variable set to the empty string counts as unset. Not under Slurm (no SLURM_JOB_ID,
// or no node list): under_slurm is false and nothing else is set. Under Slurm, a malformed value (a bad
// host list, a count that is not a positive integer, a node name not in the node list, a job id with
// characters other than letters, digits, '-' and '_') is an error naming the variable and its value.
Result<SlurmDefaults> slurm_defaults(const Environment& env);

// The seeds a member of d.nodes joins through: every node other than `self`, at `port`, its ring
// neighbours and the node half way round first (gossip asks a few at a time), then the others in ring
// order after `self`. Every node when `self` is not in the list; empty for a one-node job.
std::vector<net::HostPort> slurm_seeds(const SlurmDefaults& d, const std::string& self, uint16_t port);

// This process's environment as an Environment: the keys starting with "SLURM", CUDA_VISIBLE_DEVICES,
// where a cluster key may be found (SHOAL_KEY_FILE, CREDENTIALS_DIRECTORY, HOME: see key_discovery.hpp), and
// a Kubernetes pod's (kubernetes_env.hpp: KUBERNETES_SERVICE_HOST, SHOAL_POD_NAME, SHOAL_NODE_NAME, SHOAL_JOB,
// SHOAL_POD_IP, NVIDIA_VISIBLE_DEVICES).
Environment process_environment();

}  // namespace shoal::ops
