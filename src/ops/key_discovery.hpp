// Where `shoal agent` finds its cluster key when no --key-file names one, so that an agent runs keyed with
// no flag where the operator's tooling put a key in a known place:
//   $SHOAL_KEY_FILE, when set;
//   under systemd, the credential `cluster.key` (LoadCredential=cluster.key:/etc/shoal/cluster.key in the
//     unit): $CREDENTIALS_DIRECTORY/cluster.key;
//   under Slurm, the job's own key, made by the batch script before `srun shoal agent` (`shoal keygen
//     --output ~/.shoal/job-$SLURM_JOB_ID.key`, on a file system every node sees): $HOME/.shoal/job-ID.key.
// A per-job key keeps each job to itself; a fleet-wide key would give every job access to every other.
// Pure but for one stat per candidate: the environment comes in as a map.
#pragma once

#include <optional>
#include <string>

#include "ops/slurm_env.hpp"

namespace shoal::ops {

struct FoundKey {
  std::string path;
  std::string from;  // for the log: "SHOAL_KEY_FILE", "the systemd credential", "the Slurm job's key"
};

// The first candidate above whose file exists (SHOAL_KEY_FILE is taken even if it does not, so that its
// error names it); nullopt when none.
std::optional<FoundKey> discover_key_file(const Environment& env, const SlurmDefaults& slurm);

}  // namespace shoal::ops
