// The agent's config file as CLI11 reads it with ConfigFileFormat: `key = value` lines set the flags of the
// app they are read for (switches included), the command line overrides them, and every line that cannot be
// used is an error naming the file, the line and what is wrong.
#include "ops/config_file.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "../support/process.hpp"

using namespace shoal;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// An app with a few flags of each kind, as `shoal agent` has them.
struct Agent {
  std::optional<std::string> name, bind, seeds, cluster, level;
  std::optional<int64_t> slots;
  bool no_slurm = false;
  CLI::App app{"test", "shoal agent"};
  Agent() {
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--name", name);
    app.add_option("--bind", bind);
    app.add_option("--seeds", seeds);
    app.add_option("--cluster", cluster);
    app.add_option("--log-level", level);
    app.add_option("--slots", slots)
        ->check(CLI::Validator(
            [](std::string& v) {
              return v.find_first_not_of("0123456789") == std::string::npos && !v.empty()
                         ? std::string()
                         : "'" + v + "' is not a whole number";
            },
            ""));
    app.add_flag("--no-slurm", no_slurm);
    ops::add_config_flag(app, "read flags from PATH");
  }
  std::vector<CLI::ConfigItem> read(const std::string& text) {
    std::istringstream in(text);
    return app.get_config_formatter()->from_config(in);
  }
  // The message of the line the text is refused for, "agent.conf:LINE: problem".
  std::string error_of(const std::string& text) {
    try {
      read(text);
    } catch (const CLI::Error& e) {
      return ops::config_error_text("agent.conf", e);
    }
    FAIL("accepted: " << text);
    return {};
  }
  // Parses `args` (in order) after writing `text` to a file that --config names.
  void parse(const std::string& text, std::vector<std::string> args, const std::string& dir) {
    const std::string path = dir + "/agent.conf";
    std::ofstream(path) << text;
    args.insert(args.begin(), {"--config", path});
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  }
};

}  // namespace

TEST_CASE("key = value lines become config items in file order; comments, blanks and quotes are handled") {
  Agent a;
  const auto items = a.read(
      "# a host of the prod cluster\n"
      "\n"
      "name = gpu-node-07\n"
      "  bind=0.0.0.0:7946  \n"
      "seeds = gpu-node-01:7946,gpu-node-02:7946\n"
      "cluster = \"prod llm\"\n"
      "no-slurm = true\n"
      "log-level = 'info,gossip=debug'\n");
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& item : items) {
    CHECK(item.parents.empty());
    REQUIRE(item.inputs.size() == 1);
    got.emplace_back(item.name, item.inputs.front());
  }
  CHECK(got == std::vector<std::pair<std::string, std::string>>{{"name", "gpu-node-07"},
                                                                {"bind", "0.0.0.0:7946"},
                                                                {"seeds", "gpu-node-01:7946,gpu-node-02:7946"},
                                                                {"cluster", "prod llm"},
                                                                {"no-slurm", "true"},
                                                                {"log-level", "info,gossip=debug"}});
}

TEST_CASE("malformed lines are errors naming the file, the line and the problem") {
  CHECK(Agent().error_of("name = a\nno equals sign\n") == "agent.conf:2: expected `key = value`, got 'no equals sign'");
  CHECK(contains(Agent().error_of("--name = a\n"), "agent.conf:1: '--name' is not a flag name"));
  CHECK(contains(Agent().error_of("Name = a\n"), "is not a flag name"));
  CHECK(Agent().error_of("\n\nfrobnicate = 1\n") == "agent.conf:3: 'frobnicate' is not a flag of shoal agent");
  CHECK(contains(Agent().error_of("name =\n"), "agent.conf:1: 'name' has no value"));
  CHECK(contains(Agent().error_of("name = a\nname = b\n"), "agent.conf:2: 'name' is given twice"));
  CHECK(contains(Agent().error_of("config = other.conf\n"), "agent.conf:1: a config file cannot name another"));
  CHECK(contains(Agent().error_of("help = true\n"), "agent.conf:1: 'help' cannot be set in a config file"));
  CHECK(Agent().error_of("# slots\nslots = four\n") == "agent.conf:2: slots: 'four' is not a whole number");
  CHECK(Agent().error_of("no-slurm = maybe\n") == "agent.conf:1: 'no-slurm' is a switch: true or false, not 'maybe'");
  CHECK(contains(Agent().error_of("[agent]\n"), "agent.conf:1: expected `key = value`"));
  // Control characters of the line are shown, not sent to the terminal (a NUL would also cut the message).
  const char line[] = "na\x01m\0e = a\n";
  CHECK(contains(Agent().error_of(std::string(line, sizeof line - 1)), "agent.conf:1: 'na\\x01m\\x00e' is not a"));
}

TEST_CASE("a switch can be set in the config file") {
  shoal::test::TempDir dir;
  Agent on;
  on.parse("name = a\nno-slurm = true\n", {}, dir.path());
  CHECK(on.no_slurm);
  for (const char* word : {"yes", "on", "1"}) {
    Agent a;
    a.parse(std::string("no-slurm = ") + word + "\n", {}, dir.path());
    CHECK_MESSAGE(a.no_slurm, word);
  }
  for (const char* word : {"false", "no", "off", "0"}) {
    Agent a;
    a.parse(std::string("no-slurm = ") + word + "\n", {}, dir.path());
    CHECK_FALSE_MESSAGE(a.no_slurm, word);
  }
}

TEST_CASE("flags on the command line override the file, which fills in the rest") {
  shoal::test::TempDir dir;
  Agent a;
  a.parse("name = from-file\nslots = 8\nlog-level = debug\n", {"--name", "from-cli", "--log-level=warn"}, dir.path());
  CHECK(*a.name == "from-cli");
  CHECK(*a.slots == 8);
  CHECK(*a.level == "warn");
  CHECK_FALSE(a.bind.has_value());
}

TEST_CASE("a file that cannot be read is an error that names it") {
  shoal::test::TempDir dir;
  Agent a;
  const std::vector<std::string> args = {dir.path() + "/absent.conf", "--config"};  // reversed, as CLI11 takes them
  try {
    std::vector<std::string> reversed = args;
    a.app.parse(reversed);
    FAIL("an absent config file was accepted");
  } catch (const CLI::ParseError& e) {
    CHECK(contains(e.what(), dir.path() + "/absent.conf"));
  }
}

TEST_CASE("what the format writes, it reads back to the same values") {
  shoal::test::TempDir dir;
  Agent a;
  a.parse("name = \" spaced \"\ncluster = '#hash'\nseeds = '\"quoted\"'\nno-slurm = true\nslots = 3\n", {}, dir.path());
  const std::string written = a.app.config_to_str();
  Agent b;
  b.parse(written, {}, dir.path());
  CHECK(*b.name == " spaced ");
  CHECK(*b.cluster == "#hash");
  CHECK(*b.seeds == "\"quoted\"");
  CHECK(b.no_slurm);
  CHECK(*b.slots == 3);
  CHECK(contains(a.app.config_to_str(true, true), "# "));  // with the flags' help as comments
}
