// Parsing of control request lines and dispatch to registered handlers.
#include "control/handlers.hpp"

#include <unistd.h>

#include <exception>

#include "base/log.hpp"
#include "control/replies/errors_and_acks.hpp"

namespace shoal::control {

Caller Caller::itself() {
  return Caller{static_cast<uint32_t>(::geteuid()), static_cast<uint32_t>(::getegid()),
                static_cast<int32_t>(::getpid()), true};
}

void ControlHandlers::add(std::string name, std::string summary, Handler handler, Access access) {
  add_with_caller(
      std::move(name), std::move(summary),
      [h = std::move(handler)](std::span<const std::string> args, const Caller&) { return h(args); }, access);
}

void ControlHandlers::add_with_caller(std::string name, std::string summary, CallerHandler handler, Access access) {
  for (auto& e : entries_) {
    if (e.name == name) {
      e.summary = std::move(summary);
      e.handler = std::move(handler);
      e.access = access;
      return;
    }
  }
  entries_.push_back({std::move(name), std::move(summary), std::move(handler), {}, {}, access});
}

std::optional<std::string> ControlHandlers::refuse(const Entry& e, const Caller& caller) const {
  if (e.access == Access::query) return std::nullopt;
  const auto self = static_cast<uint32_t>(::geteuid());
  const auto group = static_cast<uint32_t>(::getegid());
  if (caller.known && (caller.uid == 0 || caller.uid == self)) return std::nullopt;
  if (e.access == Access::local && caller.known && caller.gid == group) return std::nullopt;
  ++refused_;
  const std::string who = caller.known
                              ? "uid " + std::to_string(caller.uid) + " (pid " + std::to_string(caller.pid) + ")"
                              : "a caller the kernel could not identify";
  if (e.access == Access::local) {
    log::get(log::Component::agent)
        .warn("control request '{}' refused: {} is neither the agent's user (uid {}), of its group (gid {}), nor root",
              e.name, who, self, group);
    return error_reply("request '" + e.name + "' changes state or costs the cluster work: only the agent's user (uid " +
                       std::to_string(self) + "), its group (gid " + std::to_string(group) +
                       ") or root may send it, not " + who);
  }
  log::get(log::Component::agent)
      .warn(
          "control request '{}' refused: it changes the cluster, and {} is neither the agent's user (uid {}) nor "
          "root",
          e.name, who, self);
  return error_reply("request '" + e.name + "' changes the cluster: only the agent's user (uid " +
                     std::to_string(self) + ") or root may send it, not " + who);
}

void ControlHandlers::add_async(std::string name, std::string summary, std::chrono::milliseconds max_wait,
                                AsyncHandler handler, Access access) {
  for (auto& e : entries_) {
    if (e.name == name) {
      e = Entry{std::move(name), std::move(summary), {}, std::move(handler), max_wait, access};
      return;
    }
  }
  entries_.push_back({std::move(name), std::move(summary), {}, std::move(handler), max_wait, access});
}

std::vector<std::string> ControlHandlers::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

std::optional<Access> ControlHandlers::access_of(std::string_view name) const {
  for (const auto& e : entries_) {
    if (e.name == name) return e.access;
  }
  return std::nullopt;
}

namespace {

// Splits a request line into words; nullopt with `why` for lines that are not acceptable.
std::optional<std::vector<std::string>> split_request(std::string_view line, std::string& why) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kMaxControlRequestBytes) {
    why = "request longer than " + std::to_string(kMaxControlRequestBytes) + " bytes";
    return std::nullopt;
  }
  std::vector<std::string> words;
  std::string word;
  for (char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ' ' || c == '\t') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
      continue;
    }
    if (u < 0x21 || u > 0x7E) {
      why = "request contains a byte that is not printable ASCII";
      return std::nullopt;
    }
    word += c;
  }
  if (!word.empty()) words.push_back(std::move(word));
  if (words.empty()) {
    why = "empty request";
    return std::nullopt;
  }
  return words;
}

}  // namespace

std::optional<std::chrono::milliseconds> ControlHandlers::dispatch_async(std::string_view line, Reply reply,
                                                                         const Caller& caller) const {
  std::string why;
  const auto words = split_request(line, why);
  if (!words) return std::nullopt;
  for (const auto& e : entries_) {
    if (e.name != words->front() || !e.async_handler) continue;
    if (auto refused = refuse(e, caller)) {
      reply(std::move(*refused));
      return e.max_wait;
    }
    try {
      e.async_handler(std::span<const std::string>(*words).subspan(1), reply);
    } catch (const std::exception& ex) {
      reply(error_reply("request '" + e.name + "' failed: " + ex.what()));
    }
    return e.max_wait;
  }
  return std::nullopt;
}

std::string ControlHandlers::error_reply(std::string_view message) const {
  ErrorReply reply{std::string(message), {}};
  for (const auto& e : entries_) reply.requests.push_back(e.name);
  return write_reply(reply);
}

std::string ControlHandlers::dispatch(std::string_view line, const Caller& caller) const {
  std::string why;
  const auto words = split_request(line, why);
  if (!words) return error_reply(why);
  for (const auto& e : entries_) {
    if (e.name == words->front()) {
      if (!e.handler) return error_reply("request '" + e.name + "' is not served here");
      if (auto refused = refuse(e, caller)) return std::move(*refused);
      try {
        return e.handler(std::span<const std::string>(*words).subspan(1), caller);
      } catch (const std::exception& ex) {
        return error_reply("request '" + e.name + "' failed: " + ex.what());
      }
    }
  }
  return error_reply("unknown request '" + words->front() + "'");
}

}  // namespace shoal::control
