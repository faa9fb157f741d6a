// What `shoal ckpt gc` may remove from /dev/shm: objects named like shoal's segments (slots, replicas,
// spares) whose store no live agent on this host uses, written by this user, and not just written.
// The plan is a pure function of a listing, so its rules are tested without touching /dev/shm.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::ckpt {

// One directory entry as lstat saw it.
struct ShmObject {
  std::string name;  // file name, no leading '/'
  bool regular = false;
  uint32_t uid = 0;
  uint64_t bytes = 0;
  int64_t age_s = 0;  // seconds since its last modification
};

enum class GcVerdict : uint8_t {
  remove,     // shoal-shaped, ours, old enough, and no live agent uses its store
  in_use,     // a live agent on this host uses its store
  too_young,  // modified less than min_age_s ago: a trainer may be starting before its agent answers
  refused,    // another user's object, or not a regular file: never shoal's to remove
};
std::string_view name(GcVerdict v);

struct GcEntry {
  std::string name;
  std::string store;
  uint64_t bytes = 0;
  GcVerdict verdict = GcVerdict::remove;
};

// The store of a file named like a shoal segment: "shoal.<store>.r<rank>.v<slot>",
// "shoal.<store>.p<rank>.s<step>" or "shoal.<store>.p<rank>.spare"; nullopt for anything else.
std::optional<std::string> segment_store_of(std::string_view file_name);

// Every shoal-shaped object of `objects` with its verdict, in name order; other objects are left out.
std::vector<GcEntry> plan_gc(std::span<const ShmObject> objects, const std::set<std::string>& live_stores, uint32_t uid,
                             int64_t min_age_s);

// The entries of `dir` (lstat'ed: a link is described, never followed).
std::vector<ShmObject> list_shm_objects(const std::string& dir = "/dev/shm");

}  // namespace shoal::ckpt
