// WorkerProcess: one worker the agent launches: fork and exec with an exact environment, in a process
// group of its own (so a stop reaches the worker's own children, e.g. data loaders), stdout and stderr
// on pipes the agent reads, and killed by the kernel if the agent itself dies (PR_SET_PDEATHSIG), so a
// SIGKILLed host never leaves orphans that hold GPUs or ports.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace shoal::launcher {

struct WorkerSpec {
  std::vector<std::string> argv;                         // argv[0] is looked up in PATH unless it has a '/'
  std::vector<std::pair<std::string, std::string>> env;  // the complete environment
};

struct SpawnedWorker {
  pid_t pid = -1;      // also its process group id
  int stdout_fd = -1;  // read ends, non-blocking and close-on-exec; the caller owns them
  int stderr_fd = -1;
};

// Resolves argv[0] against PATH (from `env`, else /usr/local/bin:/usr/bin:/bin); fails when it names
// nothing executable, so a typo is one clear error at start instead of a crash loop of workers. An empty
// PATH entry is not searched (never the current directory unless "." is written out).
Result<std::string> resolve_program(const std::string& program,
                                    const std::vector<std::pair<std::string, std::string>>& env);

// Starts the worker, holding descriptors 0, 1 and 2 only. Fails (with errno's text) when the pipes or the
// fork fail; an exec failure shows up as the child's exit status 127 with a line on its stderr.
Result<SpawnedWorker> spawn_worker(const WorkerSpec& spec);

// Sends `signal` to the worker's process group; a group that is gone already is not an error.
void signal_worker(pid_t pid, int signal);

// This process's environment as pairs, in order.
std::vector<std::pair<std::string, std::string>> current_environment();

// "exited 0", "exited 3", "killed by SIGKILL" for a waitpid status.
std::string describe_wait_status(int status);

}  // namespace shoal::launcher
