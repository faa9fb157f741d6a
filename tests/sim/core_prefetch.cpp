// What prefetch_core loads, step by step, and how it reaches the core's private fields without a
// hook in the core.
//
// The fields are read through the rule that access is not checked in the template arguments of an
// explicit instantiation ([temp.spec.general]/6 in C++20): instantiating Expose<&Class::field, Tag>
// defines the friend function field_of(Tag), which returns that member pointer. The core stays free of
// simulator machinery, and renaming or removing a field the simulator reads is a compile error here,
// never a silent miss. Every read is of an address to prefetch; nothing is written.
#include "core_prefetch.hpp"

#include <type_traits>
#include <utility>

#include "gossip/swim_core.hpp"

namespace shoal::sim {
namespace {

template <auto Member, class Tag>
struct Expose {
  friend constexpr auto field_of(Tag) { return Member; }
};

#define SHOAL_SIM_EXPOSE(Tag, member_pointer)      \
  struct Tag {                                     \
    friend constexpr auto field_of(Tag);           \
  };                                               \
  template struct Expose<member_pointer, Tag>

using gossip::MemberTable;
using gossip::NameIndex;
using gossip::PacketWriter;
using gossip::ProbeOrder;
using gossip::Swim;
using gossip::SwimCore;

SHOAL_SIM_EXPOSE(SwimImpl, &Swim::core_);
SHOAL_SIM_EXPOSE(CoreTimersField, &SwimCore::timers_);
// The core's timer heap, whose action type is private to the core: named through the field's type.
using CoreTimers = std::remove_cvref_t<decltype(std::declval<const SwimCore&>().*field_of(CoreTimersField{}))>;
SHOAL_SIM_EXPOSE(CoreOrder, &SwimCore::order_);
SHOAL_SIM_EXPOSE(CoreQueue, &SwimCore::queue_);
SHOAL_SIM_EXPOSE(CoreWriter, &SwimCore::writer_);
SHOAL_SIM_EXPOSE(CoreUdpLimits, &SwimCore::udp_limits_);
SHOAL_SIM_EXPOSE(CoreOut, &SwimCore::out_);
SHOAL_SIM_EXPOSE(CoreProbes, &SwimCore::probes_);
SHOAL_SIM_EXPOSE(CoreSuspicions, &SwimCore::suspicions_);
SHOAL_SIM_EXPOSE(CoreNextGossip, &SwimCore::next_gossip_at_);
SHOAL_SIM_EXPOSE(TableRows, &MemberTable::rows_);
SHOAL_SIM_EXPOSE(TableLayout, &MemberTable::layout_);
SHOAL_SIM_EXPOSE(TableIndex, &MemberTable::index_);
SHOAL_SIM_EXPOSE(IndexSlots, &NameIndex::slots_);
SHOAL_SIM_EXPOSE(IndexHome, &NameIndex::home);
SHOAL_SIM_EXPOSE(IndexPositionOf, &NameIndex::position_of);
SHOAL_SIM_EXPOSE(TimersHeap, &CoreTimers::heap_);
SHOAL_SIM_EXPOSE(TimersPool, &CoreTimers::pool_);
SHOAL_SIM_EXPOSE(WriterPrefix, &PacketWriter::prefix_);
SHOAL_SIM_EXPOSE(OrderEntries, &ProbeOrder::order_);
SHOAL_SIM_EXPOSE(OrderPos, &ProbeOrder::pos_);

#undef SHOAL_SIM_EXPOSE

template <class Tag, class Object>
const auto& field(const Object& object) {
  return object.*field_of(Tag{});
}

// The slot a lookup of this hash reads first (nullptr when the index is empty).
const uint64_t* home_slot(const NameIndex& index, uint64_t h) {
  const auto& slots = field<IndexSlots>(index);
  return slots.empty() ? nullptr : &slots[(index.*field_of(IndexHome{}))(h)];
}

// The position of the first slot from the home slot whose tag matches the hash, searched no further
// than about the home slot's cache line (kNone if none; it may be another name's, as tags are 32 bits).
uint32_t likely_position(const NameIndex& index, uint64_t h) {
  const auto& slots = field<IndexSlots>(index);
  if (slots.empty()) return NameIndex::kNone;
  for (size_t i = (index.*field_of(IndexHome{}))(h); i < slots.size(); ++i) {
    const uint64_t s = slots[i];
    if (s == 0) return NameIndex::kNone;
    if ((s >> 32) == (h >> 32)) return field_of(IndexPositionOf{})(s);
    if ((i + 1) % 8 == 0) break;  // 8 slots to 64 bytes
  }
  return NameIndex::kNone;
}

// The record at a position (text: its text, which needs the record loaded).
void prefetch_record(const MemberTable& table, uint32_t position, bool text) {
  const auto& rows = field<TableRows>(table);
  if (position >= rows.size()) return;
  if (text) {
    const gossip::StoredRecord& r = rows[position];
    if (r.text == nullptr) return;
    __builtin_prefetch(r.text);
    __builtin_prefetch(r.text + r.name_len + r.addr_len);  // a lookup reads the name, a probe the address
  } else {
    __builtin_prefetch(&rows[position]);
  }
}

// What find(name) will read: 0 the index slot, 1 the record, 2 its text.
void prefetch_lookup(const MemberTable& table, uint64_t h, int step) {
  const NameIndex& index = field<TableIndex>(table);
  if (step == 0) {
    if (const uint64_t* s = home_slot(index, h)) __builtin_prefetch(s);
    return;
  }
  const uint32_t at = likely_position(index, h);
  if (at != NameIndex::kNone) prefetch_record(table, at, step == 2);
}

// The top of the timer heap (step 0) or the earliest timer's action (step 1, which reads the top).
void prefetch_timers(const CoreTimers& timers, int step) {
  const auto& heap = field<TimersHeap>(timers);
  if (heap.empty()) return;
  const auto& pool = field<TimersPool>(timers);
  if (step == 0) {
    __builtin_prefetch(heap.data());
  } else if (heap.front().slot < pool.size()) {
    __builtin_prefetch(&pool[heap.front().slot]);
  }
}

// The probe order's next entry, if the round has one left.
const ProbeOrder::Slot* upcoming(const ProbeOrder& order) {
  const auto& entries = field<OrderEntries>(order);
  const size_t pos = field<OrderPos>(order);
  return pos < entries.size() ? &entries[pos] : nullptr;
}

}  // namespace

void prefetch_core(const gossip::Swim& swim, int step, std::string_view peer) {
  const SwimCore* core = field<SwimImpl>(swim).get();
  if (core == nullptr) return;
  const MemberTable& table = core->table();
  const uint64_t h = (peer.empty() || step == 0) ? 0 : NameIndex::hash(peer);
  switch (step) {
    case 0:
      // The lines of the core object that calls read, not its 4.4 KB: every line loaded here is one
      // fewer in flight for the other events being prefetched.
      __builtin_prefetch(&core->config());
      __builtin_prefetch(&field<TableRows>(table));
      __builtin_prefetch(&field<TableLayout>(table));
      __builtin_prefetch(&field<CoreOrder>(*core));
      __builtin_prefetch(&field<CoreQueue>(*core));
      __builtin_prefetch(&field<CoreWriter>(*core));
      __builtin_prefetch(&field<CoreUdpLimits>(*core));
      __builtin_prefetch(&core->stats());
      __builtin_prefetch(&core->stats().probe_rtt_buckets);
      __builtin_prefetch(&field<CoreOut>(*core));
      __builtin_prefetch(&field<CoreTimersField>(*core));
      __builtin_prefetch(&field<CoreProbes>(*core));
      __builtin_prefetch(&field<CoreSuspicions>(*core));
      __builtin_prefetch(&field<CoreNextGossip>(*core));
      break;
    case 1: {
      if (!peer.empty()) prefetch_lookup(table, h, 0);
      prefetch_timers(field<CoreTimersField>(*core), 0);
      __builtin_prefetch(field<WriterPrefix>(field<CoreWriter>(*core)).data());
      if (const ProbeOrder::Slot* next = upcoming(field<CoreOrder>(*core))) __builtin_prefetch(next);
      const auto& probes = field<CoreProbes>(*core);
      if (!probes.empty()) __builtin_prefetch(&*probes.begin());
      break;
    }
    case 2:
    case 3: {
      if (!peer.empty()) prefetch_lookup(table, h, step - 1);
      if (step == 2) prefetch_timers(field<CoreTimersField>(*core), 1);
      const ProbeOrder::Slot* next = upcoming(field<CoreOrder>(*core));
      if (next != nullptr && *next < table.size()) prefetch_record(table, *next, step == 3);
      break;
    }
    default:
      break;
  }
}

}  // namespace shoal::sim
