// Member records and the precedence that decides which claim about a member wins.
#include "gossip/member_table.hpp"

namespace shoal::gossip {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser: spreads every input bit over the output
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Verdict same_generation(State rs, uint64_t ri, State cs, uint64_t ci) {
  switch (cs) {
    case State::alive:
      if (rs == State::left) return Verdict::stale;
      if (ci > ri) return Verdict::replace;
      return (ci == ri && rs == State::alive) ? Verdict::same : Verdict::stale;
    case State::suspect:
      if (rs == State::alive) return ci >= ri ? Verdict::replace : Verdict::stale;
      if (rs == State::suspect) return ci > ri ? Verdict::replace : (ci == ri ? Verdict::same : Verdict::stale);
      return Verdict::stale;  // dead and left are only undone by the member itself, as alive
    case State::dead:
      if (rs == State::alive || rs == State::suspect) return ci >= ri ? Verdict::replace : Verdict::stale;
      if (rs == State::dead) return ci > ri ? Verdict::raise_only : (ci == ri ? Verdict::same : Verdict::stale);
      return Verdict::stale;  // left says more than dead
    case State::left:
      if (rs == State::dead) return Verdict::replace;  // the member's own word beats an accusation
      if (rs == State::left) return ci > ri ? Verdict::raise_only : (ci == ri ? Verdict::same : Verdict::stale);
      return ci >= ri ? Verdict::replace : Verdict::stale;
  }
  return Verdict::stale;
}

}  // namespace

Verdict judge(const Member& record, State state, uint64_t generation, uint64_t incarnation) {
  if (generation > record.id.generation) return state == State::suspect ? Verdict::stale : Verdict::replace;
  if (generation < record.id.generation) return Verdict::stale;
  return same_generation(record.state, record.incarnation, state, incarnation);
}

uint64_t MemberTable::record_hash(const Member& m) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the name
  for (char c : m.id.name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  return mix(h ^ mix(m.id.generation ^ mix(m.incarnation)));
}

MemberTable::MemberTable(const Identity& self, const MemberMeta& meta, Time now) {
  records_.push_back(Member{self, State::alive, 0, meta, now});
  index_.insert(self.name, 0);
  account(records_[0], +1);
}

void MemberTable::account(const Member& m, int sign) {
  if (!is_live(m.state)) return;
  live_ += sign;
  digest_ += sign > 0 ? record_hash(m) : (0 - record_hash(m));
}

MemberTable::Outcome MemberTable::apply(const Claim& claim, Time now) {
  Outcome out;
  const uint32_t at = position(claim.id.name);
  if (at == NameIndex::kNone) {
    if (claim.state == State::suspect) return out;  // unknown address: nothing to probe or record
    Member m{claim.id, claim.state, claim.incarnation, claim.state == State::alive ? claim.meta : MemberMeta{}, now};
    index_.insert(m.id.name, static_cast<uint32_t>(records_.size()));
    records_.push_back(std::move(m));
    account(records_.back(), +1);
    out.verdict = Verdict::replace;
    out.inserted = true;
    out.member = &records_.back();
    return out;
  }
  Member& rec = records_[at];
  out.member = &rec;
  out.verdict = judge(rec, claim.state, claim.id.generation, claim.incarnation);
  switch (out.verdict) {
    case Verdict::replace: {
      out.previous = rec.state;
      account(rec, -1);
      const bool new_generation = claim.id.generation != rec.id.generation;
      if (claim.state == State::alive) {
        rec.id = claim.id;
        rec.meta = claim.meta;
      } else {
        rec.id.generation = claim.id.generation;
        if (!claim.id.addr.empty()) rec.id.addr = claim.id.addr;
        if (new_generation) rec.meta = MemberMeta{};
      }
      if (rec.state != claim.state || new_generation) rec.state_since = now;
      rec.state = claim.state;
      rec.incarnation = claim.incarnation;
      account(rec, +1);
      break;
    }
    case Verdict::raise_only:
      rec.incarnation = claim.incarnation;  // not live, so the digest does not change
      break;
    case Verdict::same:
    case Verdict::stale:
      break;
  }
  return out;
}

void MemberTable::set_self(State state, uint64_t incarnation, Time now) {
  Member& me = records_[0];
  account(me, -1);
  if (me.state != state) me.state_since = now;
  me.state = state;
  me.incarnation = incarnation;
  account(me, +1);
}

const Member* MemberTable::find(const std::string& name) const {
  const uint32_t at = position(name);
  return at == NameIndex::kNone ? nullptr : &records_[at];
}

void MemberTable::expire_tombstones(Time now, Time ttl, std::vector<std::string>& removed) {
  for (size_t i = 1; i < records_.size();) {
    const Member& m = records_[i];
    if (is_live(m.state) || now - m.state_since < ttl) {
      ++i;
      continue;
    }
    removed.push_back(m.id.name);
    index_.erase(m.id.name, static_cast<uint32_t>(i));
    const uint32_t last = static_cast<uint32_t>(records_.size() - 1);
    if (i != last) {
      index_.move(records_[last].id.name, last, static_cast<uint32_t>(i));
      records_[i] = std::move(records_.back());
    }
    records_.pop_back();
  }
}

}  // namespace shoal::gossip
