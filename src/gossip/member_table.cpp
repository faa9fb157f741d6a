// Member records and the precedence that decides which claim about a member wins.
#include "gossip/member_table.hpp"

#include <algorithm>
#include <stdexcept>

#include "gossip/codec.hpp"

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

Verdict judge(State record_state, uint64_t record_generation, uint64_t record_incarnation, State state,
              uint64_t generation, uint64_t incarnation) {
  if (generation > record_generation) return state == State::suspect ? Verdict::stale : Verdict::replace;
  if (generation < record_generation) return Verdict::stale;
  return same_generation(record_state, record_incarnation, state, incarnation);
}

uint64_t MemberTable::record_hash(std::string_view name, uint64_t generation, uint64_t incarnation) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the name
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  return mix(h ^ mix(generation ^ mix(incarnation)));
}

MemberTable::MemberTable(const Identity& self, const MemberMeta& meta, Time now) : self_id_(self) {
  if (self.name.size() > kMaxNameBytes || self.addr.size() > kMaxNameBytes) {
    throw std::invalid_argument("member name and address must be at most " + std::to_string(kMaxNameBytes) + " bytes");
  }
  StoredRecord r;
  r.generation = self.generation;
  r.state_since = now;
  write_text(r, self.name, self.addr, encode_meta(meta));
  rows_.push_back(r);
  index_.insert(self.name, 0);
  account(0, +1);
}

void MemberTable::account(uint32_t position, int sign) {
  const StoredRecord& r = rows_[position];
  if (!is_live(r.state)) return;
  live_ += sign;
  const uint64_t h = record_hash(std::string_view(r.text, r.name_len), r.generation, r.incarnation);
  digest_ += sign > 0 ? h : (0 - h);
}

void MemberTable::write_text(StoredRecord& r, std::string_view name, std::string_view addr, std::string_view meta) {
  if (r.text != nullptr) text_live_ -= size_t{r.name_len} + r.addr_len + r.meta_len;
  // The arena never moves what it holds, so name, addr and meta may point into it.
  r.text = text_.store({name, addr, meta});
  r.name_len = static_cast<uint16_t>(name.size());
  r.addr_len = static_cast<uint16_t>(addr.size());
  r.meta_len = static_cast<uint32_t>(meta.size());
  text_live_ += name.size() + addr.size() + meta.size();
}

void MemberTable::set_text(StoredRecord& r, std::string_view addr, std::string_view meta) {
  const std::string_view old_addr(r.text + r.name_len, r.addr_len), old_meta(r.text + r.name_len + r.addr_len, r.meta_len);
  if (old_addr != addr || old_meta != meta) write_text(r, std::string_view(r.text, r.name_len), addr, meta);
}

MemberMeta MemberRef::meta() const { return decode_meta(encoded_meta()); }

MemberTable::Outcome MemberTable::apply(const Claim& claim, Time now) {
  Outcome out;
  const uint32_t at = position(claim.id.name);
  if (at == NameIndex::kNone) {
    if (claim.state == State::suspect) return out;  // unknown address: nothing to probe or record
    if (claim.id.name.size() > kMaxNameBytes || claim.id.addr.size() > kMaxNameBytes) return out;
    StoredRecord r;
    r.generation = claim.id.generation;
    r.incarnation = claim.incarnation;
    r.state = claim.state;
    r.refused = claim.state == State::dead && claim.refused;
    r.state_since = now;
    write_text(r, claim.id.name, claim.id.addr, claim.state == State::alive ? encode_meta(claim.meta) : std::string());
    const auto pos = static_cast<uint32_t>(rows_.size());
    index_.insert(claim.id.name, pos);
    rows_.push_back(r);
    account(pos, +1);
    ++version_;
    out.verdict = Verdict::replace;
    out.inserted = true;
    out.member = MemberRef(this, pos);
    return out;
  }
  StoredRecord& rec = rows_[at];
  out.member = MemberRef(this, at);
  out.verdict = judge(rec.state, rec.generation, rec.incarnation, claim.state, claim.id.generation, claim.incarnation);
  switch (out.verdict) {
    case Verdict::replace: {
      out.previous = rec.state;
      account(at, -1);
      const bool new_generation = claim.id.generation != rec.generation;
      const std::string_view old_addr(rec.text + rec.name_len, rec.addr_len);
      if (claim.state == State::alive) {
        if (claim.id.addr.size() <= kMaxNameBytes) set_text(rec, claim.id.addr, encode_meta(claim.meta));
      } else {
        const std::string_view addr = claim.id.addr.empty() || claim.id.addr.size() > kMaxNameBytes
                                          ? old_addr : std::string_view(claim.id.addr);
        const std::string_view meta = new_generation ? std::string_view()
                                          : std::string_view(rec.text + rec.name_len + rec.addr_len, rec.meta_len);
        set_text(rec, addr, meta);
      }
      rec.generation = claim.id.generation;
      if (rec.state != claim.state || new_generation) rec.state_since = now;
      rec.state = claim.state;
      rec.refused = claim.state == State::dead && claim.refused;
      rec.incarnation = claim.incarnation;
      account(at, +1);
      ++version_;
      break;
    }
    case Verdict::raise_only:
      rec.incarnation = claim.incarnation;  // not live, so the digest does not change
      ++version_;
      break;
    case Verdict::same:
    case Verdict::stale:
      break;
  }
  return out;
}

void MemberTable::set_self(State state, uint64_t incarnation, Time now) {
  StoredRecord& me = rows_[0];
  account(0, -1);
  if (me.state != state) me.state_since = now;
  me.state = state;
  me.incarnation = incarnation;
  account(0, +1);
  ++version_;
}

std::vector<Member> MemberTable::members() const {
  std::vector<Member> out;
  out.reserve(rows_.size());
  for (uint32_t i = 0; i < rows_.size(); ++i) out.push_back(at(i).member());
  return out;
}

void MemberTable::expire_tombstones(Time now, Time ttl, std::vector<std::string>& removed) {
  for (size_t i = 1; i < rows_.size();) {
    const StoredRecord& r = rows_[i];
    if (is_live(r.state) || now - r.state_since < ttl) {
      ++i;
      continue;
    }
    const std::string_view name(r.text, r.name_len);
    removed.emplace_back(name);
    index_.erase(name, static_cast<uint32_t>(i));
    text_live_ -= r.name_len + r.addr_len + r.meta_len;
    const auto last = static_cast<uint32_t>(rows_.size() - 1);
    if (i != last) {
      index_.move(std::string_view(rows_[last].text, rows_[last].name_len), last, static_cast<uint32_t>(i));
      rows_[i] = rows_.back();
    }
    rows_.pop_back();
    ++layout_;
    ++version_;
  }
  compact_text();
}

void MemberTable::compact_text() {
  constexpr size_t kMinGarbage = 64 * 1024;
  if (text_.used() - text_live_ < std::max(kMinGarbage, text_live_)) return;
  TextArena fresh;
  for (StoredRecord& r : rows_) {
    r.text = fresh.store({std::string_view(r.text, size_t{r.name_len} + r.addr_len + r.meta_len)});
  }
  text_ = std::move(fresh);
}

}  // namespace shoal::gossip
