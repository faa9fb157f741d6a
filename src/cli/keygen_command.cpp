// `shoal keygen`: prints a fresh random cluster key in the key file's format (for --key-file).
#include <iostream>

#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "wire/cluster_key.hpp"

namespace shoal::cli {

int keygen_command(std::span<const std::string> args) {
  auto app = command_app("shoal keygen", "shoal keygen > PATH && chmod 600 PATH",
                         "Print a new random cluster key (32 bytes from the system's random source, base64, with a\n"
                         "comment line) in the format --key-file reads. Copy the same file to every host of the\n"
                         "cluster, readable by its owner only. To rotate, add the new key as a second line, then move\n"
                         "it first, then remove the old one, with a SIGHUP to every agent after each step.");
  if (auto done = parse_command(*app, args)) return *done;
  if (auto ok = wire::init_sodium(); !ok) {
    std::cerr << "shoal keygen: " << ok.error().message << "\n";
    return kExitFailure;
  }
  std::cout << wire::generate_key_text();
  return kExitOk;
}

}  // namespace shoal::cli
