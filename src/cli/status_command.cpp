// `shoal status`: one screen an operator reads at a glance: this host, the committed view and whether
// it is stable, members by state, the last view changes with what triggered them and how long they
// took, and the checkpoints held here with how far replication trails the saves.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "cli/byte_size.hpp"
#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"

namespace shoal::cli {
namespace {

std::string clock_time(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char out[16];
  std::strftime(out, sizeof out, "%H:%M:%S", &tm);
  return out;
}

std::string names(const std::vector<std::string>& list, char sign) {
  std::string out;
  for (const auto& n : list) out += std::string(out.empty() ? "" : " ") + sign + n;
  return out;
}

// One committed view: when, how many members, who joined (+) and left (-), what started it and how long it took.
void print_change(const control::ViewChangeRow& c, const control::NamesCut* cut = nullptr) {
  std::string diff = names(c.joined, '+');
  const std::string gone = names(c.left, '-');
  diff += (diff.empty() || gone.empty() ? "" : " ") + gone;
  if (cut != nullptr) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " (names cut: %" PRIu64 " joined, %" PRIu64 " left in all)", cut->joined, cut->left);
    diff += buf;
  }
  std::string took;
  if (c.seconds) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "  (%s: %.3f s to commit)", c.trigger.c_str(), *c.seconds);
    took = buf;
  }
  std::printf("  epoch %-6" PRIu64 " %s  %3" PRIu64 " member(s)  %s%s\n", c.epoch, clock_time(c.committed_unix).c_str(),
              c.members, diff.c_str(), took.c_str());
}

int print_history(const control::ViewHistoryReply& doc) {
  std::printf("history  %s: %zu committed view(s) kept of %" PRIu64 " since the agent started (at most %" PRIu64
              "), newest last\n",
              doc.self.c_str(), doc.view_changes.size(), doc.recorded, doc.kept);
  for (const auto& c : doc.view_changes) {
    const auto cut = std::find_if(doc.cut.begin(), doc.cut.end(), [&](const auto& x) { return x.epoch == c.epoch; });
    print_change(c, cut == doc.cut.end() ? nullptr : &*cut);
  }
  return kExitOk;
}

// A figure of a trainer's report as text ("-" when the report did not carry it).
std::string figure(const control::StatusTrainer& t, const std::string& key, const char* format) {
  for (const auto& [k, v] : t.figures) {
    if (k != key) continue;
    char buf[48];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
  }
  return "-";
}

void print_trainers(const std::vector<control::StatusTrainer>& trainers) {
  if (trainers.empty()) {
    std::printf("trainers no reports yet (no local trainer sent what its run lost)\n");
    return;
  }
  std::printf("trainers what each local trainer's run lost (its latest report; ETTR: productive over wall time)\n");
  for (const auto& t : trainers) {
    const auto n = [&](const char* key) { return figure(t, key, "%.0f"); };
    const auto s = [&](const char* key) { return figure(t, key, "%.2f"); };
    std::printf("  rank %" PRIu32
                ": %s step(s), %s sample(s), %s rebuild(s); steps discarded %s, redone %s, rolled "
                "back %s\n",
                t.rank, n("steps_completed").c_str(), n("samples_trained").c_str(), n("rebuilds").c_str(),
                n("steps_discarded").c_str(), n("steps_redone").c_str(), n("steps_rolled_back").c_str());
    std::printf(
        "          seconds: startup %s, rebuild %s, stall %s, save %s, lost steps %s, wall %s; ETTR %s "
        "(reported %.1f s ago)\n",
        s("startup_s").c_str(), s("rebuild_s").c_str(), s("stall_s").c_str(), s("save_s").c_str(),
        s("lost_step_s").c_str(), s("wall_s").c_str(), figure(t, "ettr", "%.3f").c_str(), t.age_s);
  }
}

int print_status(const control::StatusReply& doc) {
  std::printf("host     %s (%s, generation %" PRIu64 "), cluster %s (%s), %" PRIu32 " slot(s)\n", doc.self.c_str(),
              doc.addr.c_str(), doc.generation, doc.cluster.c_str(),
              doc.keyed ? "keyed" : "OPEN: no cluster key, --insecure", doc.slots);
  const auto& v = doc.view;
  std::printf("view     epoch %" PRIu64 ", %" PRIu64 " member(s), %" PRIu64 " of them live, %s; this host %s\n",
              v.epoch, v.members, v.live_of_view, v.status.c_str(), v.in_view ? "included" : "not included");
  if (!v.reason.empty()) std::printf("         %s\n", v.reason.c_str());
  const auto& s = doc.members_by_state;
  std::printf("members  alive %" PRIu64 ", suspect %" PRIu64 ", dead %" PRIu64 ", left %" PRIu64 "\n", s.alive,
              s.suspect, s.dead, s.left);
  const auto& changes = doc.view_changes;
  std::printf("changes  %s\n", changes.empty() ? "(none yet)" : "the last committed views, newest last");
  for (const auto& c : changes) print_change(c);
  const auto& k = doc.checkpoints;
  std::printf("ckpt     job %s: %" PRIu64 " local version(s) (%s), %" PRIu64
              " replica(s) for peers (%s); pushed %" PRIu64 ", push failures %" PRIu64 ", received %" PRIu64
              ", refused %" PRIu64 "\n",
              k.job.c_str(), k.local_versions, human_bytes(k.local_bytes).c_str(), k.replicas,
              human_bytes(k.replica_bytes).c_str(), k.pushed, k.push_failed, k.received, k.receive_refused);
  for (const auto& l : k.lag) {
    if (l.replicated_step) {
      std::printf("  rank %" PRIu32 ": saved step %" PRIu64 ", replicated step %" PRIu64 " (%" PRIu64 " behind)\n",
                  l.rank, l.committed_step, *l.replicated_step, l.steps_behind.value_or(0));
    } else {
      std::printf("  rank %" PRIu32 ": saved step %" PRIu64 ", not replicated yet\n", l.rank, l.committed_step);
    }
  }
  const auto& h = doc.health;
  if (h.reported) {
    std::string named;
    for (const auto& n : h.stragglers) named += (named.empty() ? "" : ", ") + n;
    std::printf("health   stragglers: %s (epoch %" PRIu64 ", step %" PRIu64 "; `shoal health` for the figures)\n",
                named.empty() ? "none" : named.c_str(), h.epoch, h.step);
  } else {
    std::printf("health   no figures yet (no local trainer reported its steps)\n");
  }
  if (!h.eviction.empty() && h.eviction != "off") {
    std::printf("evict    %s (%" PRIu64 " eviction(s) seen)\n", h.eviction.c_str(), h.evictions);
  }
  print_trainers(doc.trainers);
  return kExitOk;
}

}  // namespace

int status_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false, history = false;
  auto app =
      command_app("shoal status", "shoal status [--control PATH | --name NAME] [--history] [--json]",
                  "One screen about a running agent: this host, the committed view (epoch, size, stable or why not),\n"
                  "members by state, the last view changes (who joined or left, the gossip event that started\n"
                  "each, and the time from that event to the commit here), the checkpoints this host holds with\n"
                  "how far replication trails the saves, the straggler verdict the local trainer last\n"
                  "reported (see `shoal health`), and what each local trainer's run lost (steps discarded,\n"
                  "redone and rolled back, seconds of rebuilds and stalls, ETTR). Exit status: 0 on success,\n"
                  "1 when no agent answers, 2 on a usage error.");
  add_agent_socket_flags(*app, control, name);
  app->add_flag("--json", json, "print the agent's JSON document");
  app->add_flag("--history", history,
                "every committed view change the agent kept (its last 256; the screen shows the last 8) instead, "
                "oldest first (the view-history request)");
  if (auto done = parse_command(*app, args)) return *done;
  const auto print_raw = [](const std::string& raw) {
    std::cout << raw << (raw.empty() || raw.back() != '\n' ? "\n" : "");
    return kExitOk;
  };
  if (history) {
    return ask_agent("shoal status", control, name, "view-history",
                     [json, print_raw](const control::ViewHistoryReply& doc, const std::string& raw) {
                       return json ? print_raw(raw) : print_history(doc);
                     });
  }
  return ask_agent("shoal status", control, name, "status",
                   [json, print_raw](const control::StatusReply& doc, const std::string& raw) {
                     return json ? print_raw(raw) : print_status(doc);
                   });
}

}  // namespace shoal::cli
