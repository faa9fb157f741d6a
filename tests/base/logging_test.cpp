// Logging setup: level specs from the flag and from SHOAL_LOG, per-component loggers.
#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <cstdlib>
#include <sstream>

#include "base/log.hpp"

using namespace shoal;

TEST_CASE("a bare level applies to every component") {
  auto spec = log::parse_spec("warn");
  REQUIRE(spec.ok());
  for (auto c : log::kComponents) CHECK(spec->level_of(c) == spdlog::level::warn);
}

TEST_CASE("component overrides apply to that component only") {
  auto spec = log::parse_spec("error, gossip=debug ,ckpt=trace");
  REQUIRE(spec.ok());
  CHECK(spec->level_of(log::Component::gossip) == spdlog::level::debug);
  CHECK(spec->level_of(log::Component::ckpt) == spdlog::level::trace);
  CHECK(spec->level_of(log::Component::agent) == spdlog::level::err);
}

TEST_CASE("unknown levels and components are rejected with the offending word") {
  auto bad_level = log::parse_spec("loud");
  REQUIRE_FALSE(bad_level.ok());
  CHECK(bad_level.error().message.find("loud") != std::string::npos);
  auto bad_comp = log::parse_spec("info,gosip=debug");
  REQUIRE_FALSE(bad_comp.ok());
  CHECK(bad_comp.error().message.find("gosip") != std::string::npos);
  CHECK_FALSE(log::parse_spec("").ok());
}

TEST_CASE("the flag wins over SHOAL_LOG, and SHOAL_LOG over the default") {
  ::setenv("SHOAL_LOG", "debug", 1);
  auto from_env = log::spec_from(std::nullopt);
  REQUIRE(from_env.ok());
  CHECK(from_env->level_of(log::Component::agent) == spdlog::level::debug);
  auto from_flag = log::spec_from(std::string_view("error"));
  REQUIRE(from_flag.ok());
  CHECK(from_flag->level_of(log::Component::agent) == spdlog::level::err);
  ::setenv("SHOAL_LOG", "nonsense", 1);
  auto bad_env = log::spec_from(std::nullopt);
  REQUIRE_FALSE(bad_env.ok());
  CHECK(bad_env.error().message.find("SHOAL_LOG") != std::string::npos);
  ::unsetenv("SHOAL_LOG");
  auto dflt = log::spec_from(std::nullopt);
  REQUIRE(dflt.ok());
  CHECK(dflt->level_of(log::Component::gossip) == spdlog::level::info);
}

TEST_CASE("each component logs under its own name at its own level") {
  auto spec = log::parse_spec("warn,gossip=debug");
  REQUIRE(spec.ok());
  log::setup(*spec);
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  log::redirect(sink);
  log::get(log::Component::gossip).debug("probe sent");
  log::get(log::Component::agent).info("should not appear");
  log::get(log::Component::agent).warn("port busy");
  const std::string text = out.str();
  CHECK(text.find("[gossip] probe sent") != std::string::npos);
  CHECK(text.find("should not appear") == std::string::npos);
  CHECK(text.find("[agent] port busy") != std::string::npos);
}
