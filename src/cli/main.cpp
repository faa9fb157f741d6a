// The shoal binary: a thin main over the agent library.
#include "cli/cli.hpp"

int main(int argc, char** argv) { return shoal::cli::run_cli(argc, argv); }
