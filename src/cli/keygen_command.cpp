// `shoal keygen`: a fresh random cluster key in the key file's format (for --key-file), printed, or written
// to a new file that is readable by its owner only from its first byte.
#include <iostream>
#include <optional>
#include <string>

#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/key_file_writer.hpp"
#include "wire/cluster_key.hpp"

namespace shoal::cli {

int keygen_command(std::span<const std::string> args) {
  auto app = command_app("shoal keygen [--output PATH]", "shoal keygen --output /etc/shoal/cluster.key",
                         "Make a new random cluster key (32 bytes from the system's random source, base64, with a\n"
                         "comment line) in the format --key-file reads: printed, or with --output written to a new\n"
                         "file created with mode 0600 (never an existing one). Copy the same file to every host of\n"
                         "the cluster, readable by its owner only; one key per job keeps jobs apart (under Slurm the\n"
                         "agent finds ~/.shoal/job-$SLURM_JOB_ID.key by itself). To rotate, add the new key as a\n"
                         "second line, then move it first, then remove the old one, with a SIGHUP to every agent\n"
                         "after each step.");
  std::string output;
  app->add_option("--output,-o", output, "write the key to this new file (mode 0600) instead of printing it")
      ->type_name("PATH");
  if (auto done = parse_command(*app, args)) return *done;
  if (auto ok = wire::init_sodium(); !ok) {
    std::cerr << "shoal keygen: " << ok.error().message << "\n";
    return kExitFailure;
  }
  const std::string text = wire::generate_key_text();
  if (output.empty()) {
    std::cout << text;
    return kExitOk;
  }
  if (auto failed = write_new_key_file(output, text)) {
    std::cerr << "shoal keygen: cannot write " << output << ": " << *failed << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace shoal::cli
