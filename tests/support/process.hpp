// Test support: child processes that are always cleaned up (SIGKILL and reap in the destructor, and
// PR_SET_PDEATHSIG so that they die with the test even when it is killed), temporary directories
// that remove themselves, and one-shot command runs with a time limit.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace shoal::test {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction unless
// SHOAL_KEEP_TEST_DIRS is set (then its path is printed, for reading the agents' logs).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class ChildProcess {
 public:
  // Starts argv[0] (a path) with stdin from /dev/null, stdout to a pipe read by read_line(), and
  // stderr appended to stderr_path. Throws std::runtime_error if it cannot be started.
  ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path);
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The next line of stdout (without the newline), or nullopt at EOF or after the timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  void send_signal(int sig);
  // The exit code (128 + signal number when killed by a signal), or nullopt if still running
  // after the timeout.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  // SIGKILL and reap; a no-op when it has already been reaped.
  void kill_and_reap();

 private:
  void close_pipe();
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffered_;
  std::optional<int> exit_code_;
};

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed; -1 when it had to be killed for the time limit
  std::string out;
  std::string err;
};

// Runs argv to completion (killed after `timeout`), capturing stdout and stderr.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace shoal::test
