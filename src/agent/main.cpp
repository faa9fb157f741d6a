// The shoal binary: a thin main over the agent library.
#include "agent/cli.hpp"

int main(int argc, char** argv) { return shoal::agent::run_cli(argc, argv); }
