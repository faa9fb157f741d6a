// `shoal ckpt gc`: removes the /dev/shm segments a crashed job left behind. A store is live when an
// agent on this host answers `ckpt-ls` naming it; nothing of a live store, nothing another user wrote,
// and nothing written in the last --min-age seconds is ever removed.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <iostream>

#include "ckpt_shm/segment_gc.hpp"
#include "cli/byte_size.hpp"
#include "cli/ckpt_gc.hpp"
#include "cli/cli.hpp"
#include "control/client.hpp"
#include "control/replies.hpp"
#include "control/socket_path.hpp"

namespace shoal::cli {

int gc_command(const GcOptions& opt) {
  // Every agent this host can find: the default socket directories, plus --control paths.
  std::vector<std::string> sockets = control::list_control_sockets(control::probe_control_dirs());
  sockets.insert(sockets.end(), opt.controls.begin(), opt.controls.end());
  std::set<std::string> live;
  std::vector<std::string> agents;
  for (const auto& path : sockets) {
    auto raw = control::control_request(path, "ckpt-ls");
    if (!raw) continue;  // a stale socket: its agent is gone
    auto reply = control::parse_reply<control::CkptLsReply>(*raw);
    if (!reply) continue;
    live.insert(reply->store);
    agents.push_back(path);
  }
  const auto plan = ckpt::plan_gc(ckpt::list_shm_objects(opt.dir), live, static_cast<uint32_t>(::geteuid()),
                                  opt.min_age_s);
  std::vector<std::string> failed;
  uint64_t freed = 0;
  std::vector<bool> removed(plan.size(), false);
  for (size_t i = 0; i < plan.size() && opt.yes; ++i) {
    if (plan[i].verdict != ckpt::GcVerdict::remove) continue;
    if (::unlink((opt.dir + "/" + plan[i].name).c_str()) == 0) {
      removed[i] = true;
      freed += plan[i].bytes;
    } else {
      failed.push_back(plan[i].name);
    }
  }
  if (opt.json) {
    control::Json doc;
    doc["dir"] = opt.dir;
    doc["removed"] = opt.yes;
    doc["live_stores"] = control::Json::array();
    for (const auto& s : live) doc["live_stores"].push_back(s);
    doc["agents"] = agents;
    doc["segments"] = control::Json::array();
    for (size_t i = 0; i < plan.size(); ++i) {
      control::Json e;
      e["name"] = plan[i].name;
      e["store"] = plan[i].store;
      e["bytes"] = plan[i].bytes;
      e["verdict"] = std::string(ckpt::name(plan[i].verdict));
      e["removed"] = static_cast<bool>(removed[i]);
      doc["segments"].push_back(std::move(e));
    }
    doc["freed_bytes"] = freed;
    doc["failed"] = failed;
    std::cout << control::dump_document(doc) << "\n";
  } else {
    std::printf("%zu live agent(s) on this host; stores in use: %zu\n", agents.size(), live.size());
    for (size_t i = 0; i < plan.size(); ++i) {
      const std::string verdict = plan[i].verdict == ckpt::GcVerdict::remove
                                      ? (opt.yes ? (removed[i] ? "removed" : "FAILED") : "would remove")
                                      : std::string(ckpt::name(plan[i].verdict));
      std::printf("%-14s %12s %s/%s\n", verdict.c_str(), human_bytes(plan[i].bytes).c_str(), opt.dir.c_str(),
                  plan[i].name.c_str());
    }
    if (plan.empty()) std::printf("(no segment named like shoal's in %s)\n", opt.dir.c_str());
    if (!opt.yes) std::printf("nothing removed: pass --yes to remove what is marked \"would remove\"\n");
    if (opt.yes) std::printf("freed %s\n", human_bytes(freed).c_str());
  }
  for (const auto& f : failed) std::cerr << "shoal ckpt gc: could not remove " << opt.dir << "/" << f << "\n";
  return failed.empty() ? kExitOk : kExitFailure;
}

}  // namespace shoal::cli
