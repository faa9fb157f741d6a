// The agent's config file: `key = value` lines become flags in file order, log-level is kept apart,
// and every malformed line is an error naming the file, the line and what is wrong.
#include "ops/config_file.hpp"

#include <doctest/doctest.h>

#include <fstream>

#include "../support/process.hpp"

using namespace shoal;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("key = value lines become flags in file order; comments, blanks and quotes are handled") {
  auto parsed = ops::parse_config_text(
      "# a host of the prod cluster\n"
      "\n"
      "name = gpu-node-07\n"
      "  bind=0.0.0.0:7946  \n"
      "seeds = gpu-node-01:7946,gpu-node-02:7946\n"
      "min-hosts = 4\n"
      "cluster = \"prod llm\"\n"
      "log-level = info,gossip=debug\n",
      "agent.conf");
  REQUIRE(parsed.ok());
  CHECK(parsed->args == std::vector<std::string>{"--name", "gpu-node-07", "--bind", "0.0.0.0:7946", "--seeds",
                                                 "gpu-node-01:7946,gpu-node-02:7946", "--min-hosts", "4", "--cluster",
                                                 "prod llm"});
  REQUIRE(parsed->log_level.has_value());
  CHECK(*parsed->log_level == "info,gossip=debug");
}

TEST_CASE("malformed lines are errors naming the file, the line and the problem") {
  const auto error_of = [](const std::string& text) {
    auto parsed = ops::parse_config_text(text, "agent.conf");
    REQUIRE_FALSE(parsed.ok());
    return parsed.error().message;
  };
  CHECK(contains(error_of("name = a\nno equals sign\n"), "agent.conf:2: expected `key = value`"));
  CHECK(contains(error_of("--name = a\n"), "agent.conf:1: '--name' is not a flag name"));
  CHECK(contains(error_of("Name = a\n"), "is not a flag name"));
  CHECK(contains(error_of("name =\n"), "agent.conf:1: 'name' has no value"));
  CHECK(contains(error_of("name = a\nname = b\n"), "agent.conf:2: 'name' is given twice"));
  CHECK(contains(error_of("config = other.conf\n"), "cannot name another config file"));
}

TEST_CASE("read_config_file reads a real file, and names one it cannot read") {
  shoal::test::TempDir dir;
  const std::string path = dir.path() + "/agent.conf";
  std::ofstream(path) << "slots = 8\n";
  auto parsed = ops::read_config_file(path);
  REQUIRE(parsed.ok());
  CHECK(parsed->args == std::vector<std::string>{"--slots", "8"});
  auto missing = ops::read_config_file(dir.path() + "/absent.conf");
  REQUIRE_FALSE(missing.ok());
  CHECK(contains(missing.error().message, "absent.conf"));
}

TEST_CASE("the --config path is found before --, in both spellings") {
  const std::vector<std::string> spaced = {"--bind", "x:1", "--config", "/etc/shoal/agent.conf"};
  CHECK(ops::config_path_in(spaced) == std::optional<std::string>("/etc/shoal/agent.conf"));
  const std::vector<std::string> joined = {"--config=/a.conf"};
  CHECK(ops::config_path_in(joined) == std::optional<std::string>("/a.conf"));
  const std::vector<std::string> after_dash = {"--", "--config", "/a.conf"};
  CHECK_FALSE(ops::config_path_in(after_dash).has_value());
}
