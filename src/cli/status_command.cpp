// `shoal status`: one screen an operator reads at a glance: this host, the committed view and whether
// it is stable, members by state, the last view changes with what triggered them and how long they
// took, and the checkpoints held here with how far replication trails the saves.
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"

namespace shoal::cli {
namespace {

std::string text(const control::JsonValue& v, const char* key) {
  const control::JsonValue* f = v.find(key);
  return f ? f->as_string().value_or("") : std::string();
}
uint64_t number(const control::JsonValue& v, const char* key) {
  const control::JsonValue* f = v.find(key);
  return f ? f->as_uint64().value_or(0) : 0;
}
const std::vector<control::JsonValue>& items(const control::JsonValue& v, const char* key) {
  static const std::vector<control::JsonValue> none;
  const control::JsonValue* f = v.find(key);
  return f ? f->items() : none;
}

std::string gib(uint64_t bytes) {
  char out[32];
  std::snprintf(out, sizeof out, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return out;
}

std::string clock_time(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char out[16];
  std::strftime(out, sizeof out, "%H:%M:%S", &tm);
  return out;
}

std::string names(const control::JsonValue& change, const char* key, char sign) {
  std::string out;
  for (const auto& n : items(change, key))
    out += std::string(out.empty() ? "" : " ") + sign + n.as_string().value_or("");
  return out;
}

int print_status(const control::JsonValue& doc) {
  std::printf("host     %s (%s, generation %" PRIu64 "), cluster %s, %" PRIu64 " slot(s)\n", text(doc, "self").c_str(),
              text(doc, "addr").c_str(), number(doc, "generation"), text(doc, "cluster").c_str(), number(doc, "slots"));
  if (const control::JsonValue* v = doc.find("view")) {
    const control::JsonValue* in_view = v->find("in_view");
    std::printf("view     epoch %" PRIu64 ", %" PRIu64 " member(s), %" PRIu64 " of them live, %s; this host %s\n",
                number(*v, "epoch"), number(*v, "members"), number(*v, "live_of_view"), text(*v, "status").c_str(),
                in_view && in_view->as_bool().value_or(false) ? "included" : "not included");
    if (!text(*v, "reason").empty()) std::printf("         %s\n", text(*v, "reason").c_str());
  }
  if (const control::JsonValue* s = doc.find("members_by_state")) {
    std::printf("members  alive %" PRIu64 ", suspect %" PRIu64 ", dead %" PRIu64 ", left %" PRIu64 "\n",
                number(*s, "alive"), number(*s, "suspect"), number(*s, "dead"), number(*s, "left"));
  }
  const auto& changes = items(doc, "view_changes");
  std::printf("changes  %s\n", changes.empty() ? "(none yet)" : "the last committed views, newest last");
  for (const auto& c : changes) {
    std::string diff = names(c, "joined", '+');
    const std::string gone = names(c, "left", '-');
    diff += (diff.empty() || gone.empty() ? "" : " ") + gone;
    std::string took;
    if (const control::JsonValue* s = c.find("seconds")) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "  (%s: %.3f s to commit)", text(c, "trigger").c_str(),
                    s->as_double().value_or(0));
      took = buf;
    }
    const control::JsonValue* when = c.find("committed_unix");
    std::printf("  epoch %-6" PRIu64 " %s  %3" PRIu64 " member(s)  %s%s\n", number(c, "epoch"),
                clock_time(when ? when->as_double().value_or(0) : 0).c_str(), number(c, "members"), diff.c_str(),
                took.c_str());
  }
  if (const control::JsonValue* k = doc.find("checkpoints")) {
    std::printf("ckpt     job %s: %" PRIu64 " local version(s) (%s), %" PRIu64
                " replica(s) for peers (%s); pushed %" PRIu64 ", push failures %" PRIu64 ", received %" PRIu64
                ", refused %" PRIu64 "\n",
                text(*k, "job").c_str(), number(*k, "local_versions"), gib(number(*k, "local_bytes")).c_str(),
                number(*k, "replicas"), gib(number(*k, "replica_bytes")).c_str(), number(*k, "pushed"),
                number(*k, "push_failed"), number(*k, "received"), number(*k, "receive_refused"));
    for (const auto& l : items(*k, "lag")) {
      if (l.find("replicated_step")) {
        std::printf("  rank %" PRIu64 ": saved step %" PRIu64 ", replicated step %" PRIu64 " (%" PRIu64 " behind)\n",
                    number(l, "rank"), number(l, "committed_step"), number(l, "replicated_step"),
                    number(l, "steps_behind"));
      } else {
        std::printf("  rank %" PRIu64 ": saved step %" PRIu64 ", not replicated yet\n", number(l, "rank"),
                    number(l, "committed_step"));
      }
    }
  }
  return kExitOk;
}

}  // namespace

int status_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false;
  auto app =
      command_app("shoal status", "shoal status [--control PATH | --name NAME] [--json]",
                  "One screen about a running agent: this host, the committed view (epoch, size, stable or why not),\n"
                  "members by state, the last view changes (who joined or left, the gossip event that started\n"
                  "each, and the time from that event to the commit here), and the checkpoints this host holds\n"
                  "with how far replication trails the saves. Exit status: 0 on success, 1 when no agent\n"
                  "answers, 2 on a usage error.");
  add_agent_socket_flags(*app, control, name);
  app->add_flag("--json", json, "print the agent's JSON document");
  if (auto done = parse_command(*app, args)) return *done;
  return ask_agent("shoal status", control, name, "status",
                   [json](const control::JsonValue& doc, const std::string& raw) {
                     if (json) {
                       std::cout << raw << (raw.empty() || raw.back() != '\n' ? "\n" : "");
                       return kExitOk;
                     }
                     return print_status(doc);
                   });
}

}  // namespace shoal::cli
