// Assembles `shoal --version` from the build info and the backends' own reports.
#include "cli/version_text.hpp"

#include "base/build_info.hpp"
#include "comm_wrap/backends.hpp"

namespace shoal::cli {

std::string version_text() {
  std::string out = "shoal " + std::string(build::version()) + "\n";
  out += "git " + std::string(build::git_revision()) + "\n";
  out += std::string("gloo ") + (comm::gloo_compiled_in() ? "yes" : "no") + "\n";
  out += "nccl " + comm::nccl_version() + "\n";
  out += "systemd yes\n";  // the notify protocol is built in (ops/systemd_notify), no libsystemd needed
  return out;
}

}  // namespace shoal::cli
