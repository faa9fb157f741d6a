// Defaults for the agent's flags taken from a Kubernetes pod's environment, so that a pod of
// deploy/kubernetes/ runs `shoal agent --key-file K --seeds SERVICE:7946 -- train ...` and nothing else:
// the member name from the pod's name, the failure domain (--host) from the node's name, the job and
// cluster id from the job's name and the address others reach the pod at from the pod's IP, each as the
// manifest hands it down through the downward API (SHOAL_POD_NAME, SHOAL_NODE_NAME, SHOAL_JOB,
// SHOAL_POD_IP); the slots from the GPUs the NVIDIA device plugin gave the container
// (NVIDIA_VISIBLE_DEVICES). Under Kubernetes means KUBERNETES_SERVICE_HOST is set: the kubelet sets it
// in every container. Pure: the environment comes in as a map, so that tests can pin every branch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "ops/slurm_env.hpp"

namespace shoal::ops {

// The port every agent of a pod set binds when --bind is not given (the Service's port), as under Slurm.
inline constexpr uint16_t kKubernetesPort = kSlurmPort;

struct KubernetesDefaults {
  bool under_kubernetes = false;     // KUBERNETES_SERVICE_HOST is set
  std::string name;                  // SHOAL_POD_NAME, else empty (the host name, the pod's, is the default)
  std::string host;                  // SHOAL_NODE_NAME: the failure domain replica placement avoids
  std::string job;                   // SHOAL_JOB: checkpoint job name and cluster id
  std::string advertise;             // SHOAL_POD_IP: the address the other pods reach this one at
  std::optional<uint32_t> slots;     // the GPUs in NVIDIA_VISIBLE_DEVICES (not "all", "none", "void")
  std::vector<std::string> notes;    // one line per value taken from the environment, for the agent's log
};

// Reads only `env`; a variable set to the empty string counts as unset. Not under Kubernetes: nothing is
// set. A value with a control character or longer than 253 bytes (a DNS name's limit, which Kubernetes'
// names keep) is an error naming the variable; what each value must be beyond that is checked where
// the flag it stands for is (the member name rule, the job name rule, an address).
Result<KubernetesDefaults> kubernetes_defaults(const Environment& env);

}  // namespace shoal::ops
