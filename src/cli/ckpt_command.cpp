// `shoal ckpt ls`: what a running agent's host holds in shared memory: its ranks' own checkpoint
// versions and the replicas it keeps for peers. `shoal ckpt gc` lives in ckpt_gc.cpp.
#include <cinttypes>
#include <cstdio>
#include <iostream>

#include "cli/byte_size.hpp"
#include "cli/ckpt_gc.hpp"
#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"

namespace shoal::cli {
namespace {

int print_table(const control::CkptLsReply& doc, bool verify) {
  if (doc.store.empty()) {
    std::printf("job %s, segments named at the first committed view (after the cluster's lineage)\n", doc.job.c_str());
  } else {
    std::printf("job %s, segments /dev/shm/shoal.%s.*\n", doc.job.c_str(), doc.store.c_str());
  }
  std::printf("%-8s %5s %10s %5s %12s %-8s %-28s %s\n", "KIND", "RANK", "STEP", "WORLD", "BYTES",
              verify ? "VERIFIED" : "SEALED", "FROM", "SEGMENT");
  for (const auto& h : doc.held) {
    if (!h.version) {
      std::printf("%-8s %5s %10s %5s %12s %-8s %-28s %s  (%s)\n", h.kind.c_str(), "-", "-", "-",
                  human_bytes(h.segment_bytes).c_str(), "no", "-", h.segment.c_str(), h.problem.value_or("").c_str());
      continue;
    }
    const bool verified = h.verified.value_or(false);
    std::string state = "yes";
    if (verify) state = verified ? "yes" : "FAILED";
    std::printf("%-8s %5" PRIu32 " %10" PRIu64 " %5" PRIu32 " %12s %-8s %-28s %s%s\n", h.kind.c_str(), h.version->rank,
                h.version->step, h.version->world, human_bytes(h.version->bytes).c_str(), state.c_str(),
                h.from.value_or("").c_str(), h.segment.c_str(),
                verify && !verified ? ("  (" + h.problem.value_or("") + ")").c_str() : "");
  }
  if (doc.held.empty()) std::printf("(nothing held)\n");
  const auto& r = doc.refused_segments;
  if (r.symlink + r.not_regular + r.foreign_owner + r.loose_mode > 0) {
    std::printf("refused objects named like segments (not opened): %" PRIu64 " link(s), %" PRIu64
                " FIFO(s) or other non-files, %" PRIu64 " of another user, %" PRIu64 " with a mode others can read\n",
                r.symlink, r.not_regular, r.foreign_owner, r.loose_mode);
  }
  if (const auto& persist = doc.persist) {
    std::printf("\npersisted in %s: %zu version(s)%s\n", persist->dir.c_str(), persist->files.size(),
                persist->counters.busy ? ", writing" : "");
    for (const auto& p : persist->files) {
      std::printf("%-8s %5" PRIu32 " %10" PRIu64 " %5" PRIu32 " %12s %-8s %-28s %s\n", "disk", p.rank, p.step, p.world,
                  human_bytes(p.bytes).c_str(), "yes", "(this agent)", p.path.c_str());
    }
    const auto& x = persist->refused;
    if (x.unsafe_directory + x.symlink + x.not_regular + x.foreign_owner + x.loose_mode + x.oversized + x.invalid > 0) {
      std::printf("refused in the persist directory (not read): %" PRIu64 " unsafe director(ies), %" PRIu64
                  " link(s), %" PRIu64 " FIFO(s) or other non-files, %" PRIu64 " of another user, %" PRIu64
                  " with a loose mode, %" PRIu64 " oversized, %" PRIu64 " not the version named\n",
                  x.unsafe_directory, x.symlink, x.not_regular, x.foreign_owner, x.loose_mode, x.oversized, x.invalid);
    }
  }
  return kExitOk;
}

int ls_command(const std::optional<std::string>& control, const std::optional<std::string>& name, bool json,
               bool verify) {
  return ask_agent("shoal ckpt ls", control, name, verify ? "ckpt-ls verify" : "ckpt-ls",
                   [json, verify](const control::CkptLsReply& doc, const std::string& raw) {
                     if (json) {
                       std::cout << raw << (raw.empty() || raw.back() != '\n' ? "\n" : "");
                       return kExitOk;
                     }
                     return print_table(doc, verify);
                   });
}

}  // namespace

int ckpt_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false, verify = false;
  auto app = command_app("shoal ckpt",
                         "shoal ckpt ls [--control PATH | --name NAME] [--json] [--verify]\n"
                         "shoal ckpt gc [--yes] [--json] [--min-age SECONDS] [--control PATH]... [--dir DIR]",
                         "In-memory checkpoints of a running agent's host.");
  app->require_subcommand(1);
  CLI::App* ls =
      add_command(*app, "ls", "shoal ckpt ls [--control PATH | --name NAME] [--json] [--verify]",
                  "List the checkpoint versions this agent's host holds in shared memory and in --ckpt-dir.\n"
                  "Its ranks' own versions (local) and the replicas it keeps for peers (replica), with rank, step,\n"
                  "the world size they were saved in, size, whether they are sealed (complete) and where they came\n"
                  "from (a trainer on this host, or the peer that replicated them here); then what --ckpt-dir\n"
                  "holds, when the agent has one. --verify also checks every buffer's checksum in memory (reads all\n"
                  "the bytes). Exit status: 0 on success, 1 when no agent answers, 2 on a usage error.");
  add_agent_socket_flags(*ls, control, name);
  ls->add_flag("--json", json, "print the agent's JSON document");
  ls->add_flag("--verify", verify, "verify the data checksums of every sealed version");
  GcOptions gc_opt;
  CLI::App* gc = add_command(
      *app, "gc", "shoal ckpt gc [--yes] [--json] [--min-age SECONDS] [--control PATH]... [--dir DIR]",
      "List (and with --yes remove) what a crashed job left in /dev/shm: objects named like shoal's segments\n"
      "(shoal.JOB.rN.vN slots, shoal.JOB.pN.sN replicas and spares) of a job that no live agent on this host\n"
      "uses. An agent is live when it answers ckpt-ls on its control socket (the default socket directories,\n"
      "and every --control given). Never removed: another user's object or anything that is not a regular\n"
      "file (refused), a live agent's store (in_use), an object modified in the last --min-age seconds\n"
      "(too_young: a trainer may be starting before its agent). Prints each object with its verdict.\n"
      "Exit status: 0 on success, 1 when an object could not be removed, 2 on a usage error.");
  gc->add_flag("--yes", gc_opt.yes, "remove what is marked \"would remove\" (default: only list)");
  gc->add_flag("--json", gc_opt.json, "print one JSON document");
  gc->add_option("--min-age", gc_opt.min_age_s, "keep objects modified less than this many seconds ago (default 60)")
      ->check(CLI::NonNegativeNumber);
  gc->add_option("--control", gc_opt.controls, "also ask the agent at this control socket (repeatable)");
  gc->add_option("--dir", gc_opt.dir, "where the segments are (default /dev/shm)");
  if (auto done = parse_command(*app, args)) return *done;
  if (gc->parsed()) return gc_command(gc_opt);
  return ls_command(control, name, json, verify);
}

}  // namespace shoal::cli
