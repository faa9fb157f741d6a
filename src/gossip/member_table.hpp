// The member records one core holds, and SWIM's precedence between a record and a claim about it:
// (generation, incarnation, state) decide, a newer generation beats every state of an older one,
// and the highest incarnation seen is kept so that a stale alive never resurrects a dead member.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gossip/name_index.hpp"
#include "gossip/types.hpp"

namespace shoal::gossip {

// A statement about a member, as received in an update or made by this member.
struct Claim {
  Identity id;  // addr only meaningful with alive
  State state = State::alive;
  uint64_t incarnation = 0;
  MemberMeta meta;      // alive only
  std::string accuser;  // suspect / dead: who raised it
};

// What a claim means against the current record.
enum class Verdict : uint8_t {
  replace,     // the claim wins: the record takes its state (and generation, incarnation, meta)
  raise_only,  // same state, higher incarnation: stored silently so that later stale claims lose
  same,        // says what the record says (a repeated suspicion: a confirmation)
  stale,       // older than the record: ignored
};

// SWIM's precedence within a generation: Alive{i} beats Suspect{j} iff i > j, Suspect{i} beats
// Alive{j} iff i >= j, Dead{i} beats Alive/Suspect{j} iff i >= j, Alive{i} revives Dead{j} only
// when i > j (the member itself refuted), Left ends a generation. A newer generation replaces any
// record, except that a suspicion of a generation nobody announced yet is ignored (its address
// is unknown, so it could not be probed).
Verdict judge(const Member& record, State state, uint64_t generation, uint64_t incarnation);

class MemberTable {
 public:
  struct Outcome {
    Verdict verdict = Verdict::stale;
    std::optional<State> previous;  // nullopt: a new record
    bool inserted = false;
    const Member* member = nullptr;  // the record after the claim (nullptr if ignored and unknown)
  };

  MemberTable(const Identity& self, const MemberMeta& meta, Time now);

  // Applies a claim about another member (claims about self are the caller's to refute).
  Outcome apply(const Claim& claim, Time now);

  // This member's own record.
  const Member& self() const { return records_[0]; }
  // Changes this member's own record (incarnation raised to refute, or leaving).
  void set_self(State state, uint64_t incarnation, Time now);

  const Member* find(const std::string& name) const;
  // Position of a record in records() (stable until expire_tombstones), or NameIndex::kNone.
  uint32_t position_of(const std::string& name) const { return position(name); }
  const std::vector<Member>& records() const { return records_; }
  size_t size() const { return records_.size(); }
  // Alive or suspect members, self included.
  size_t live_count() const { return live_; }
  // Order-independent hash of the live records' (name, generation, incarnation): equal tables
  // have equal digests, maintained incrementally on every change.
  uint64_t digest() const { return digest_; }

  // Forgets dead and left records older than ttl; appends the names removed.
  void expire_tombstones(Time now, Time ttl, std::vector<std::string>& removed);

  static uint64_t record_hash(const Member& m);

 private:
  void account(const Member& m, int sign);
  uint32_t position(const std::string& name) const {
    return index_.find(name, [this](uint32_t p) { return std::string_view(records_[p].id.name); });
  }

  std::vector<Member> records_;  // [0] is self; iteration order is insertion order
  NameIndex index_;              // name -> position in records_
  size_t live_ = 0;
  uint64_t digest_ = 0;
};

inline bool is_live(State s) { return s == State::alive || s == State::suspect; }

}  // namespace shoal::gossip
