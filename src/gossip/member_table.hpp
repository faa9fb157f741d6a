// The member records one core holds, and SWIM's precedence between a record and a claim about it:
// (generation, incarnation, state) decide, a newer generation beats every state of an older one,
// and the highest incarnation seen is kept so that a stale alive never resurrects a dead member.
//
// Every member holds a record of every other, so a simulator of N members holds N^2 of them: a
// record is 48 bytes of fixed fields plus its name, address and encoded metadata in the table's
// arena (about 80 bytes per record with the index, against 180 for a vector of Member).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gossip/name_index.hpp"
#include "gossip/text_arena.hpp"
#include "gossip/types.hpp"

namespace shoal::gossip {

// A statement about a member, as received in an update or made by this member.
struct Claim {
  Identity id;  // addr only meaningful with alive
  State state = State::alive;
  uint64_t incarnation = 0;
  MemberMeta meta;      // alive only
  std::string accuser;  // suspect / dead: who raised it
  // suspect: the accuser saw the member's agent port refuse a connection; dead: declared on refusals
  // confirmed by others (see Member::refused).
  bool refused = false;
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
Verdict judge(State record_state, uint64_t record_generation, uint64_t record_incarnation, State state,
              uint64_t generation, uint64_t incarnation);
inline Verdict judge(const Member& record, State state, uint64_t generation, uint64_t incarnation) {
  return judge(record.state, record.id.generation, record.incarnation, state, generation, incarnation);
}

// One record as the table stores it.
struct StoredRecord {
  uint64_t generation = 0;
  uint64_t incarnation = 0;
  Time state_since{0};        // when this member's state last changed, in this member's view
  const char* text = nullptr; // name, then address, then encoded metadata, in the table's arena
  uint32_t meta_len = 0;
  uint16_t name_len = 0, addr_len = 0;
  State state = State::alive;
  bool refused = false;  // dead only: Member::refused (fits the record's padding: still 48 bytes)
};
static_assert(sizeof(StoredRecord) <= 48, "a record of every member at every member: keep it small");

class MemberTable;

// A view of one record: reads through the table, so it follows changes to the record. Valid until
// the table expires tombstones (positions move); the string_views it returns likewise.
class MemberRef {
 public:
  MemberRef() = default;
  explicit operator bool() const { return table_ != nullptr; }
  bool operator==(const MemberRef&) const = default;

  uint32_t position() const { return pos_; }
  bool is_self() const { return pos_ == 0; }
  std::string_view name() const { return {row().text, row().name_len}; }
  std::string_view addr() const { return {row().text + row().name_len, row().addr_len}; }
  uint64_t generation() const { return row().generation; }
  uint64_t incarnation() const { return row().incarnation; }
  State state() const { return row().state; }
  Time state_since() const { return row().state_since; }
  bool refused() const { return row().refused; }
  std::string_view encoded_meta() const {
    return {row().text + row().name_len + row().addr_len, row().meta_len};
  }
  MemberMeta meta() const;
  Identity identity() const { return Identity{std::string(name()), generation(), std::string(addr())}; }
  Member member() const { return Member{identity(), state(), incarnation(), meta(), state_since(), refused()}; }

 private:
  friend class MemberTable;
  MemberRef(const MemberTable* table, uint32_t pos) : table_(table), pos_(pos) {}
  const StoredRecord& row() const;

  const MemberTable* table_ = nullptr;
  uint32_t pos_ = 0;
};

inline Verdict judge(MemberRef record, State state, uint64_t generation, uint64_t incarnation) {
  return judge(record.state(), record.generation(), record.incarnation(), state, generation, incarnation);
}

class MemberTable {
 public:
  // Longest name or address a record holds; valid() refuses updates with longer ones.
  static constexpr size_t kMaxNameBytes = 1024;
  // Caps on a record's metadata and on a push-pull state, so that a peer cannot make every member hold
  // (and re-gossip) arbitrary amounts of it; valid() and merge_state() refuse what exceeds them. A state
  // of more members than this is refused whole (the largest cluster shoal is tested at is 10,000).
  static constexpr size_t kMaxHostBytes = 255;  // a DNS name's limit
  static constexpr size_t kMaxLabels = 64;
  static constexpr size_t kMaxLabelKeyBytes = 128;
  static constexpr size_t kMaxLabelValueBytes = 1024;
  static constexpr size_t kMaxStateMembers = 65536;

  struct Outcome {
    Verdict verdict = Verdict::stale;
    std::optional<State> previous;  // nullopt: a new record
    bool inserted = false;
    MemberRef member;  // the record after the claim (empty if ignored and unknown)
  };

  MemberTable(const Identity& self, const MemberMeta& meta, Time now);

  // Makes room for this many records (a roster known in advance) without reallocating.
  void reserve(size_t records) {
    rows_.reserve(records);
    index_.reserve(records);
  }

  // Applies a claim about another member (claims about self are the caller's to refute).
  Outcome apply(const Claim& claim, Time now);

  // This member's own record and identity.
  MemberRef self() const { return MemberRef(this, 0); }
  const Identity& self_identity() const { return self_id_; }
  // Changes this member's own record (incarnation raised to refute, or leaving).
  void set_self(State state, uint64_t incarnation, Time now);

  MemberRef find(std::string_view name) const {
    const uint32_t at = position(name);
    return at == NameIndex::kNone ? MemberRef() : MemberRef(this, at);
  }
  // The record at a position in [0, size()); position 0 is self. Positions are stable until
  // expire_tombstones.
  MemberRef at(uint32_t position) const { return MemberRef(this, position); }
  const StoredRecord& row(uint32_t position) const { return rows_[position]; }
  size_t size() const { return rows_.size(); }
  // Alive or suspect members, self included.
  size_t live_count() const { return live_; }
  // Order-independent hash of the live records' (name, generation, incarnation): equal tables
  // have equal digests, maintained incrementally on every change.
  uint64_t digest() const { return digest_; }
  // Every record as a Member (copies), self first.
  std::vector<Member> members() const;

  // Bumped whenever records change positions (expire_tombstones removed some): a position saved
  // with an unchanged layout still holds the same member's record.
  uint64_t layout() const { return layout_; }
  // Bumped by every change to any record (and by every layout change): equal versions, equal table.
  uint64_t version() const { return version_; }

  // Forgets dead and left records older than ttl; appends the names removed.
  void expire_tombstones(Time now, Time ttl, std::vector<std::string>& removed);

  static uint64_t record_hash(std::string_view name, uint64_t generation, uint64_t incarnation);

 private:
  void account(uint32_t position, int sign);
  uint32_t position(std::string_view name) const {
    return index_.find(name, [this](uint32_t p) { return std::string_view(rows_[p].text, rows_[p].name_len); });
  }
  // Points the record's text at a new copy of (name, addr, meta) in the arena.
  void write_text(StoredRecord& r, std::string_view name, std::string_view addr, std::string_view meta);
  // write_text with the record's own name, unless addr and meta are unchanged.
  void set_text(StoredRecord& r, std::string_view addr, std::string_view meta);
  // Rebuilds the arena from the live spans when most of it is replaced text.
  void compact_text();

  Identity self_id_;
  std::vector<StoredRecord> rows_;  // [0] is self; iteration order is insertion order
  NameIndex index_;                 // name -> position in rows_
  TextArena text_;
  size_t text_live_ = 0;  // bytes of the arena that current records point at
  size_t live_ = 0;
  uint64_t digest_ = 0;
  uint64_t layout_ = 0;
  uint64_t version_ = 0;
};

inline const StoredRecord& MemberRef::row() const { return table_->row(pos_); }

inline bool is_live(State s) { return s == State::alive || s == State::suspect; }

}  // namespace shoal::gossip
