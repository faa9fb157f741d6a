// `shoal demo`: the local multi-host demonstration. At this stage it reports what this build
// carries; the cluster run (hosts on loopback, a kill, the rebuild and restore) arrives with the
// gossip, membership, comm_wrap and ckpt_shm work.
#include <iostream>

#include "agent/cli.hpp"
#include "agent/flags.hpp"
#include "agent/version_text.hpp"

namespace shoal::agent {

int demo_command(std::span<const std::string> args) {
  FlagSet flags("shoal demo", "Run the local multi-host demo on loopback and print its timeline.");
  auto parsed = flags.parse(args);
  if (!parsed) {
    std::cerr << "shoal demo: " << parsed.error().message << "\n";
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << flags.help();
    return kExitOk;
  }
  std::cout << version_text();
  std::cout << "demo: the local cluster demo (several hosts on loopback, one killed, the view change, the\n"
               "      rebuild and the restore from a peer) arrives with the gossip and membership work;\n"
               "      this build has the foundation only.\n";
  return kExitOk;
}

}  // namespace shoal::agent
