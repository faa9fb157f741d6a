// One spdlog logger per component, sharing a stderr sink; level specs parsed from flags or SHOAL_LOG.
#include "base/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <mutex>

namespace shoal::log {
namespace {

std::optional<spdlog::level::level_enum> parse_level(std::string_view s) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"warning", spdlog::level::warn}, {"error", spdlog::level::err},
      {"critical", spdlog::level::critical}, {"off", spdlog::level::off}};
  for (const auto& [text, level] : kLevels) {
    if (s == text) return level;
  }
  return std::nullopt;
}

std::optional<Component> parse_component(std::string_view s) {
  for (Component c : kComponents) {
    if (name(c) == s) return c;
  }
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

constexpr const char* kPattern = "%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v";
std::mutex g_mutex;
std::array<std::shared_ptr<spdlog::logger>, kComponents.size()> g_loggers;

std::shared_ptr<spdlog::logger> make_logger(Component c, spdlog::sink_ptr sink) {
  auto logger = std::make_shared<spdlog::logger>(std::string(name(c)), std::move(sink));
  logger->set_pattern(kPattern);
  return logger;
}

}  // namespace

std::string_view name(Component c) {
  switch (c) {
    case Component::gossip: return "gossip";
    case Component::membership: return "membership";
    case Component::comm: return "comm";
    case Component::ckpt: return "ckpt";
    case Component::agent: return "agent";
  }
  return "?";
}

spdlog::level::level_enum LevelSpec::level_of(Component c) const {
  const auto& v = per_component[static_cast<size_t>(c)];
  return v ? *v : fallback;
}

Result<LevelSpec> parse_spec(std::string_view spec) {
  LevelSpec out;
  bool saw_any = false;
  while (true) {
    const auto comma = spec.find(',');
    const std::string_view item = trim(spec.substr(0, comma));
    if (!item.empty()) {
      saw_any = true;
      const auto eq = item.find('=');
      if (eq == std::string_view::npos) {
        const auto level = parse_level(item);
        if (!level) return fail("unknown log level '" + std::string(item) + "' (use trace, debug, info, warn, error, critical or off)");
        out.fallback = *level;
      } else {
        const auto comp = parse_component(trim(item.substr(0, eq)));
        if (!comp) {
          return fail("unknown log component '" + std::string(trim(item.substr(0, eq))) +
                      "' (use gossip, membership, comm, ckpt or agent)");
        }
        const auto level = parse_level(trim(item.substr(eq + 1)));
        if (!level) return fail("unknown log level '" + std::string(trim(item.substr(eq + 1))) + "' for " + std::string(name(*comp)));
        out.per_component[static_cast<size_t>(*comp)] = *level;
      }
    }
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  if (!saw_any) return fail("empty log level spec");
  return out;
}

Result<LevelSpec> spec_from(std::optional<std::string_view> flag_value) {
  if (flag_value) return parse_spec(*flag_value);
  if (const char* env = std::getenv("SHOAL_LOG"); env != nullptr && *env != '\0') {
    auto parsed = parse_spec(env);
    if (!parsed) return fail("SHOAL_LOG: " + parsed.error().message);
    return parsed;
  }
  return LevelSpec{};
}

void setup(const LevelSpec& spec) {
  std::lock_guard lock(g_mutex);
  spdlog::sink_ptr sink;
  for (auto& l : g_loggers) {
    if (l) sink = l->sinks().front();
  }
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  for (Component c : kComponents) {
    auto& slot = g_loggers[static_cast<size_t>(c)];
    if (!slot) slot = make_logger(c, sink);
    slot->set_level(spec.level_of(c));
  }
}

void redirect(spdlog::sink_ptr sink) {
  for (Component c : kComponents) get(c);  // make sure every logger exists
  std::lock_guard lock(g_mutex);
  for (auto& logger : g_loggers) {
    logger->sinks() = {sink};  // in place: references handed out by get() stay valid
    logger->set_pattern(kPattern);
  }
}

spdlog::logger& get(Component c) {
  {
    std::lock_guard lock(g_mutex);
    if (auto& slot = g_loggers[static_cast<size_t>(c)]) return *slot;
  }
  setup(LevelSpec{});
  std::lock_guard lock(g_mutex);
  return *g_loggers[static_cast<size_t>(c)];
}

}  // namespace shoal::log
