// Which checkpoint step a new view restores, and from which hosts: a pure function of what every host
// reports holding, so that every rank computes the same answer from the same reports without talking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace shoal::ckpt {

// One version a host holds: of one of its own ranks (local, in a RankStore) or a peer's (a replica).
struct HeldCheckpoint {
  uint32_t rank = 0;
  uint64_t step = 0;
  uint32_t world = 0;  // the job's world size when the version was saved
  uint64_t bytes = 0;
  bool local = false;  // the origin host's own store; false: a replica kept for a peer
};

// What one host holds, as it reported it.
struct HolderReport {
  std::string holder;   // the host's member name
  std::string address;  // "ip:port" of its agent, where the versions can be fetched
  std::vector<HeldCheckpoint> held;
};

struct RestoreChoice {
  uint64_t step = 0;
  uint32_t world = 0;  // the world size the step was saved with
  // For each saved rank 0..world-1: indexes into the reports given to choose_restore, best first.
  // Indexes (rather than names) so that the caller reaches the holder's address directly. The order
  // depends only on the reports' contents: given the same reports in another order, every rank's
  // list names the same holders in the same order.
  std::vector<std::vector<size_t>> holders;
};

// The newest step S <= at_most_step that can be restored in full: for every rank r in [0, W) some
// report holds (r, S) saved with world W. The reports are the committed view's ranks, and only what
// they saved themselves (local copies) vouches for a step: W is the world most of step S's local
// entries agree on (each (report, rank) counted once; a tie goes to the larger world), and a step no
// report holds locally is never chosen, whatever its replicas claim. Replicas only supply the ranks of
// a vouched (S, W) whose own host is gone. So a forged replica ("rank 0 of world 1, step 10^9") is
// ignored, and cannot make the real, older steps look superseded. One exception: when no report holds
// any local copy at all (every host lost its memory and its agent reloaded persisted versions from
// disk, which are kept as replicas), replicas vote too; the agents' push admission (a member pushes
// only its own ranks) is then what bounds a forger. Entries of S that disagree with W
// are ignored, as are entries whose rank is not below their world and entries with world 0.
//
// A rank's holders: reports holding it locally first (the origin host's own copy, read from its
// memory without a network hop if the origin host survived), then replicas; ties by holder name,
// then address, then index (only identical duplicates remain tied, and they are interchangeable).
// nullopt when no step is complete.
std::optional<RestoreChoice> choose_restore(std::span<const HolderReport> reports, uint64_t at_most_step = UINT64_MAX);

// choose_restore for a known new world (the same vouching rule), preferring for each new rank the version its own host saved:
// reports[r] is new rank r's report (so there are as many reports as new ranks). For a candidate step S
// of saved world W, new rank r restores the saved rank its host holds locally (its own slot; a host with
// several new ranks hands its local saved ranks out in order), else source_rank_for(r, new world, W). S
// qualifies when every source so chosen is held by some report: the saved ranks no new rank reads need
// not be (a host that died with its rank's newest version still on the way to its replica costs nothing
// when no new rank reads that rank). `sources[r]` is new rank r's saved rank; `holders` as in
// RestoreChoice, empty for the saved ranks no one reads. Every rank computes the same answer from the
// same reports.
struct WorldRestoreChoice {
  RestoreChoice choice;
  std::vector<uint32_t> sources;
};
std::optional<WorldRestoreChoice> choose_restore_for_world(std::span<const HolderReport> reports,
                                                           uint64_t at_most_step = UINT64_MAX);

// The saved rank whose version new rank `new_rank` restores: itself when it existed in the saved
// world, else new_rank % saved_world. This is data-parallel reasoning: every rank holds the same model
// and optimizer state, so any saved rank's version restores a new rank's model; keeping the same rank
// where it exists preserves its own per-rank state (data loader position, random generator), and the
// modulo spreads new ranks over the saved ranks, so that their reads spread over many holders instead
// of all fetching rank 0. Sharded state (ZeRO, FSDP, tensor parallel) is not interchangeable between
// ranks and needs resharding, which this does not do. nullopt when new_rank >= new_world or
// saved_world == 0.
std::optional<uint32_t> source_rank_for(uint32_t new_rank, uint32_t new_world, uint32_t saved_world);

// The holders (indexes into the reports, best first) that new rank `new_rank` of a world of
// `new_world` restores from; empty when source_rank_for has no answer.
std::span<const size_t> holders_for_new_rank(const RestoreChoice& choice, uint32_t new_rank, uint32_t new_world);

}  // namespace shoal::ckpt
