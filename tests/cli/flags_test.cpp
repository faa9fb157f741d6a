// The command-line flag parser: values in both spellings, ranges, unknown flags, help, "--".
#include "cli/flags.hpp"

#include <doctest/doctest.h>

using shoal::cli::FlagSet;

namespace {
struct Fixture {
  std::optional<std::string> name;
  std::optional<int64_t> slots;
  bool json = false;
  FlagSet flags{"shoal x", "test"};
  Fixture() {
    flags.add_string("name", "NAME", "member name", &name);
    flags.add_int("slots", "N", "GPU slots", &slots, 0, 64);
    flags.add_bool("json", "print JSON", &json);
  }
};
}  // namespace

TEST_CASE("flags accept --name VALUE and --name=VALUE") {
  Fixture f;
  std::vector<std::string> args = {"--name", "a", "--slots=8", "--json", "pos"};
  auto r = f.flags.parse(args);
  REQUIRE(r.ok());
  CHECK(*f.name == "a");
  CHECK(*f.slots == 8);
  CHECK(f.json);
  CHECK(r->positional == std::vector<std::string>{"pos"});
}

TEST_CASE("an unknown flag, a missing value and a bad number are clear errors") {
  Fixture f;
  std::vector<std::string> unknown = {"--nmae", "a"};
  auto r1 = f.flags.parse(unknown);
  REQUIRE_FALSE(r1.ok());
  CHECK(r1.error().message.find("--nmae") != std::string::npos);

  std::vector<std::string> missing = {"--name"};
  auto r2 = f.flags.parse(missing);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().message.find("needs a value") != std::string::npos);

  std::vector<std::string> bad = {"--slots", "eight"};
  auto r3 = f.flags.parse(bad);
  REQUIRE_FALSE(r3.ok());
  CHECK(r3.error().message.find("not a whole number") != std::string::npos);

  std::vector<std::string> range = {"--slots", "65"};
  auto r4 = f.flags.parse(range);
  REQUIRE_FALSE(r4.ok());
  CHECK(r4.error().message.find("out of range") != std::string::npos);

  std::vector<std::string> bool_value = {"--json=yes"};
  CHECK_FALSE(f.flags.parse(bool_value).ok());
}

TEST_CASE("everything after -- is passed through untouched") {
  Fixture f;
  std::vector<std::string> args = {"--json", "--", "python3", "train.py", "--name", "x"};
  auto r = f.flags.parse(args);
  REQUIRE(r.ok());
  CHECK_FALSE(f.name.has_value());
  CHECK(r->after_dash == std::vector<std::string>{"python3", "train.py", "--name", "x"});
}

TEST_CASE("help lists every flag") {
  Fixture f;
  std::vector<std::string> args = {"--help"};
  auto r = f.flags.parse(args);
  REQUIRE(r.ok());
  CHECK(r->help);
  const std::string h = f.flags.help();
  CHECK(h.find("--name NAME") != std::string::npos);
  CHECK(h.find("--slots N") != std::string::npos);
  CHECK(h.find("--json") != std::string::npos);
}
