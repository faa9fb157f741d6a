// Assembles `shoal --version` from the build info and the backends' own reports.
#include "agent/version_text.hpp"

#include "base/build_info.hpp"
#include "comm_wrap/backends.hpp"

namespace shoal::agent {

std::string version_text() {
  std::string out = "shoal " + std::string(build::version()) + "\n";
  out += "git " + std::string(build::git_revision()) + "\n";
  out += std::string("gloo ") + (comm::gloo_compiled_in() ? "yes" : "no") + "\n";
  out += "nccl " + comm::nccl_version() + "\n";
#ifdef SHOAL_HAVE_SYSTEMD
  out += "systemd yes\n";
#else
  out += "systemd no\n";
#endif
  return out;
}

}  // namespace shoal::agent
