// persisted_resume: which persisted step a new set of hosts resumes from after every host was lost, and
// which host loads which saved rank. Pure: the versions found under every member's directory of a shared
// --ckpt-dir (persist_peers.hpp finds and validates them) go in, a choice comes out.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ckpt_shm/persist_dir.hpp"

namespace shoal::ckpt {

// One persisted version found under `member`'s directory (<ckpt-dir>/<member>/<job>/), its prefix validated.
struct PersistedCandidate {
  std::string member;  // the directory's name: the member that wrote it, under any name
  PersistedVersion version;
};

// The step to resume from and, for each saved rank 0..world-1 in order, the copies of its file at that step
// (best first: the newest commit of the step, then by member name), so that a copy that fails its full
// check at load leaves the next.
struct ResumeChoice {
  uint64_t step = 0;
  uint32_t world = 0;
  std::vector<std::vector<PersistedCandidate>> ranks;  // ranks[r]: copies of rank r's file, best first
};

// The newest step for which every rank of one world has a file: rank r of step s and world w for every
// r < w. Files of another world at that step do not count toward it (a world of 2 and one of 3 that both
// saved step 10 are two incomplete sets unless one is whole); a version that names no world (0) or a rank
// outside its world never counts. Of two whole worlds at one step, the larger wins, so that no saved rank's
// state is dropped. nullopt when no step is whole.
std::optional<ResumeChoice> choose_resume(std::span<const PersistedCandidate> found);
// The whole steps choose_resume would choose among, newest first, at most `max_steps` of them (one world per
// step, as above): the step to resume from and the ones a restore falls back to when it fails.
std::vector<ResumeChoice> whole_persisted_steps(std::span<const PersistedCandidate> found, size_t max_steps);

// A member of the view, as resume_ranks_for sees it.
struct ResumeMember {
  std::string dir;          // its directory's name (member_dir_name in persist_peers.hpp of its member name)
  uint64_t join_epoch = 0;  // the epoch of the first view that included it
};

// The saved ranks of `choice` that the member whose directory is `self` loads, of the view's `members`. A
// rank with a copy under a member's directory goes to the first such member in its copies' order (a host
// back under its own name loads its own files, as it did at start); any other rank r goes to members[r % n]
// of the members sorted by directory name, so that together they hold every rank once, whatever their
// number. Empty when `self` is not among `members`, or joined after another member did: the cluster ran
// before it came, and its members hold newer steps, or loaded this one at their own first view.
std::vector<uint32_t> resume_ranks_for(const ResumeChoice& choice, std::vector<ResumeMember> members,
                                       const std::string& self);
// Whether `self` is among `members` and none of them joined before it: whether it is one of those that load
// a resume at all (resume_ranks_for is empty otherwise), so that a host joining a running cluster need not
// read the directory.
bool among_first_members(const std::vector<ResumeMember>& members, const std::string& self);

}  // namespace shoal::ckpt
