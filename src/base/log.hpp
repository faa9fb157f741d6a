// Logging: one spdlog logger per component, levels from a spec such as "info" or "warn,gossip=debug",
// taken from --log-level or else the SHOAL_LOG environment variable.
#pragma once

#include <spdlog/spdlog.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace shoal::log {

enum class Component { gossip, membership, comm, ckpt, agent };
inline constexpr std::array<Component, 5> kComponents = {Component::gossip, Component::membership, Component::comm,
                                                         Component::ckpt, Component::agent};

std::string_view name(Component c);

// The level of every component after applying a spec.
struct LevelSpec {
  spdlog::level::level_enum fallback = spdlog::level::info;
  std::array<std::optional<spdlog::level::level_enum>, kComponents.size()> per_component{};

  spdlog::level::level_enum level_of(Component c) const;
};

// Parses "LEVEL" or "LEVEL,component=LEVEL,..." (levels: trace debug info warn error critical off).
Result<LevelSpec> parse_spec(std::string_view spec);

// Chooses the spec: the flag when given, else SHOAL_LOG, else "info".
Result<LevelSpec> spec_from(std::optional<std::string_view> flag_value);

// Creates (or re-levels) the component loggers, all writing to standard error.
void setup(const LevelSpec& spec);

// Sends every component's output to `sink` instead (tests capture logs this way).
void redirect(spdlog::sink_ptr sink);

// The logger of a component; setup() need not have run (defaults to info on stderr).
spdlog::logger& get(Component c);

// Each component's logger by name, for the files that log as it. Defined once here rather than as a helper
// in each file's anonymous namespace, so that a library's files also compile together (meson's unity build,
// which the sanitizer build and the wheel use).
inline spdlog::logger& gossip() { return get(Component::gossip); }
inline spdlog::logger& membership() { return get(Component::membership); }
inline spdlog::logger& comm() { return get(Component::comm); }
inline spdlog::logger& ckpt() { return get(Component::ckpt); }
inline spdlog::logger& agent() { return get(Component::agent); }

}  // namespace shoal::log
