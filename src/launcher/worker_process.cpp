// WorkerProcess: fork/exec of one worker. Everything the child needs is prepared before fork(), so the
// child runs only async-signal-safe calls between fork and exec (the agent has other threads). The
// child closes every descriptor but 0, 1 and 2 before exec.
#include "launcher/worker_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace shoal::launcher {
namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> current_environment() {
  std::vector<std::pair<std::string, std::string>> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

Result<std::string> resolve_program(const std::string& program,
                                    const std::vector<std::pair<std::string, std::string>>& env) {
  if (program.empty()) return fail("the worker command is empty");
  if (program.find('/') != std::string::npos) {
    if (executable_file(program)) return program;
    return fail("the worker command '" + program + "' is not an executable file");
  }
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& [k, v] : env) {
    if (k == "PATH") path = v;
  }
  // An empty entry (a leading, trailing or doubled ':') meant the current directory to old shells; it is
  // not searched: a PATH that picked up "::" by accident must not run whatever lies where the agent
  // started. A "." written out is searched: someone chose it.
  bool empty_entry = false;
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find(':', begin), path.size());
    if (end == begin) {
      empty_entry = true;
    } else {
      const std::string candidate = path.substr(begin, end - begin) + "/" + program;
      if (executable_file(candidate)) return candidate;
    }
    begin = end + 1;
  }
  std::string message = "the worker command '" + program + "' is not found in PATH (" + path + ")";
  if (empty_entry && executable_file("./" + program)) {
    message += "; PATH has an empty entry, which shoal does not take as the current directory: run ./" + program +
               " to mean the one here";
  }
  return fail(message);
}

Result<SpawnedWorker> spawn_worker(const WorkerSpec& spec) {
  if (spec.argv.empty()) return fail("the worker command is empty");
  auto program = resolve_program(spec.argv[0], spec.env);
  if (!program) return fail(program.error().message);

  std::vector<std::string> env_text;
  env_text.reserve(spec.env.size());
  for (const auto& [k, v] : spec.env) env_text.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return fail(errno_text("pipe"));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const auto message = errno_text("pipe");
    ::close(out[0]);
    ::close(out[1]);
    return fail(message);
  }
  // Beyond the highest descriptor the child may hold, where close_range is missing (Linux before 5.9).
  struct rlimit files {};
  const int max_fd =
      ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur < (1u << 20)
          ? static_cast<int>(files.rlim_cur)
          : (1 << 20);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const auto message = errno_text("fork");
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    return fail(message);
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the agent died before the line above took effect
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    // The worker gets 0, 1 and 2 and nothing else, as torchrun's workers do. The agent's own descriptors
    // are close-on-exec already (net/cloexec.hpp); this also covers any a library left inheritable, and
    // those the agent itself inherited.
#if defined(SYS_close_range)  // a raw system call: a C library older than 2.34 has no close_range()
    const bool closed = ::syscall(SYS_close_range, 3u, ~0u, 0u) == 0;
#else
    const bool closed = false;
#endif
    if (!closed) {
      for (int fd = 3; fd < max_fd; ++fd) ::close(fd);
    }
    ::execve(program->c_str(), argv.data(), envp.data());
    static const char kMessage[] = "shoal agent: exec of the worker command failed\n";
    (void)!::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from this side, so a signal sent right after spawn reaches the group
  ::close(out[1]);
  ::close(err[1]);
  for (int fd : {out[0], err[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return SpawnedWorker{pid, out[0], err[0]};
}

void signal_worker(pid_t pid, int signal) {
  if (pid <= 0) return;
  if (::kill(-pid, signal) != 0 && errno == ESRCH) ::kill(pid, signal);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return std::string("killed by ") + (name != nullptr ? std::string("SIG") + name : std::to_string(WTERMSIG(status)));
  }
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace shoal::launcher
