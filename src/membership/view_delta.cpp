// Deltas between views (view_delta.hpp): derive, check, apply, identify.
#include "membership/view_delta.hpp"

#include <sodium.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

namespace shoal::membership {
namespace {

bool sorted_unique(const std::vector<std::string>& names) {
  return std::adjacent_find(names.begin(), names.end(), [](const auto& a, const auto& b) { return a >= b; }) ==
         names.end();
}

// u32 little-endian length, then the bytes (as canonical_encoding writes a string).
void put_name(std::string& out, std::string_view s) {
  const auto n = static_cast<uint32_t>(s.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(s);
}

void put_names(std::string& out, const std::vector<std::string>& names) {
  put_name(out, std::to_string(names.size()));
  for (const auto& n : names) put_name(out, n);
}

}  // namespace

Result<ViewDelta> delta_between(const View& base, const std::vector<ViewMember>& wanted,
                                std::vector<std::string> evicted, const std::vector<std::string>* excluded) {
  ViewDelta d;
  d.excluded = excluded != nullptr ? *excluded : base.excluded();
  std::sort(d.excluded.begin(), d.excluded.end());
  d.excluded.erase(std::unique(d.excluded.begin(), d.excluded.end()), d.excluded.end());
  d.base_epoch = base.epoch();
  d.base_hash = base.hash();
  std::map<std::string_view, const ViewMember*> want;
  for (const ViewMember& m : wanted) {
    if (!want.emplace(m.name, &m).second) return fail("the wanted member list names '" + m.name + "' twice");
  }
  for (const ViewMember& m : base.members()) {
    const auto it = want.find(m.name);
    if (it == want.end() || !(*it->second == m)) d.removed.push_back(m.name);
  }
  for (const auto& [name, m] : want) {
    const ViewMember* in_base = base.find(name);
    if (in_base == nullptr || !(*in_base == *m)) d.added.push_back(*m);
  }
  std::sort(d.removed.begin(), d.removed.end());
  std::sort(evicted.begin(), evicted.end());
  evicted.erase(std::unique(evicted.begin(), evicted.end()), evicted.end());
  for (const auto& e : evicted) {
    if (!std::binary_search(d.removed.begin(), d.removed.end(), e)) {
      return fail("'" + e + "' is evicted but the delta does not remove it");
    }
  }
  d.evicted = std::move(evicted);
  return d;
}

Status check_delta_shape(const ViewDelta& d) {
  if (d.removed.size() > kMaxViewMembers || d.added.size() > kMaxViewMembers) {
    return fail("a delta of " + std::to_string(d.removed.size()) + " removals and " + std::to_string(d.added.size()) +
                " additions is larger than any view (" + std::to_string(kMaxViewMembers) + " members)");
  }
  if (d.evicted.size() > d.removed.size()) return fail("a delta evicts more members than it removes");
  if (d.excluded.size() > kMaxViewExcluded)
    return fail("a delta excludes more than " + std::to_string(kMaxViewExcluded));
  if (!sorted_unique(d.removed) || !sorted_unique(d.evicted) || !sorted_unique(d.excluded)) {
    return fail("a delta's names are not sorted and unique");
  }
  for (size_t i = 0; i < d.added.size(); ++i) {
    const ViewMember& m = d.added[i];
    if (m.name.size() > kMaxViewTextBytes || m.host.size() > kMaxViewTextBytes || m.addr.size() > kMaxViewTextBytes) {
      return fail("a delta adds a member whose name, host or address is longer than " +
                  std::to_string(kMaxViewTextBytes) + " bytes");
    }
    if (i > 0 && d.added[i - 1].name >= m.name) return fail("a delta's additions are not sorted by unique names");
  }
  for (const auto& n : d.excluded) {
    if (n.size() > kMaxViewTextBytes)
      return fail("a delta excludes a name longer than " + std::to_string(kMaxViewTextBytes));
  }
  for (const auto& n : d.removed) {
    if (n.size() > kMaxViewTextBytes)
      return fail("a delta removes a name longer than " + std::to_string(kMaxViewTextBytes));
  }
  return Ok{};
}

Result<View> apply_delta(const View& base, const ViewDelta& d) {
  if (d.base_epoch != base.epoch() || d.base_hash != base.hash()) {
    return fail("the delta is for the view of epoch " + std::to_string(d.base_epoch) + ", not for epoch " +
                std::to_string(base.epoch()) + " held here (or another view of it)");
  }
  if (const Status shape = check_delta_shape(d); !shape) return fail(shape.error().message);
  for (const auto& n : d.removed) {
    if (base.find(n) == nullptr) return fail("the delta removes '" + n + "', which is not a member");
  }
  for (const auto& e : d.evicted) {
    if (!std::binary_search(d.removed.begin(), d.removed.end(), e)) {
      return fail("the delta evicts '" + e + "' without removing it");
    }
  }
  const size_t kept = base.size() - d.removed.size();
  if (kept + d.added.size() > kMaxViewMembers) {
    return fail("the delta makes a view of " + std::to_string(kept + d.added.size()) + " members, more than " +
                std::to_string(kMaxViewMembers));
  }
  std::vector<ViewMember> members;
  members.reserve(kept + d.added.size());
  for (const ViewMember& m : base.members()) {
    if (!std::binary_search(d.removed.begin(), d.removed.end(), m.name)) members.push_back(m);
  }
  for (const ViewMember& m : d.added) {
    const ViewMember* in_base = base.find(m.name);
    if (in_base != nullptr && !std::binary_search(d.removed.begin(), d.removed.end(), m.name)) {
      return fail("the delta adds '" + m.name + "', which the view keeps");
    }
    members.push_back(m);
  }
  return View::make(base.epoch() + 1, std::move(members), base.lineage(), d.evicted, d.excluded);
}

DeltaId delta_id(const ViewDelta& d) {
  std::string bytes = "shoal.delta.v1";
  put_name(bytes, std::to_string(d.base_epoch));
  put_name(bytes, std::to_string(d.base_hash));
  put_names(bytes, d.removed);
  bytes += canonical_encoding(0, d.added);
  put_names(bytes, d.evicted);
  if (!d.excluded.empty()) {
    bytes += "excluded";
    put_names(bytes, d.excluded);
  }
  DeltaId id{};
  crypto_generichash(id.data(), id.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), nullptr,
                     0);
  return id;
}

}  // namespace shoal::membership
