// The command line of shoal-sim: `shoal-sim SCENARIO [flags]` parsed into a scenario and its inputs.
#pragma once

#include <span>
#include <string>

#include "base/result.hpp"
#include "scenario.hpp"

namespace shoal::sim {

struct SimCommand {
  bool help = false;
  const Scenario* scenario = nullptr;  // set unless help
  ScenarioInputs inputs;
};

// Parses the arguments after the program name. Errors say what was wrong (exit 2 material).
Result<SimCommand> parse_sim_args(std::span<const std::string> args);
std::string sim_help();

}  // namespace shoal::sim
