// The operator's exclusions: resolving names, the next list, and the majority rule.
#include "membership/exclusion.hpp"

#include <algorithm>

#include "base/str_cat.hpp"

namespace shoal::membership {

Result<std::vector<std::string>> resolve_members(const View& view, const std::vector<gossip::Member>& gossip,
                                                 const std::vector<std::string>& words) {
  if (words.empty()) return fail(std::string("name at least one member or host"));
  std::set<std::string> out;
  for (const auto& word : words) {
    if (word.empty()) return fail(std::string("an empty name"));
    if (view.find(word) != nullptr || view.excludes(word)) {
      out.insert(word);
      continue;
    }
    const auto by_name = std::find_if(gossip.begin(), gossip.end(), [&](const auto& m) { return m.id.name == word; });
    if (by_name != gossip.end()) {
      out.insert(word);
      continue;
    }
    size_t found = 0;
    for (const ViewMember& m : view.members()) {
      if (m.host == word) out.insert(m.name), ++found;
    }
    for (const auto& m : gossip) {
      if (m.meta.host == word) out.insert(m.id.name), ++found;
    }
    if (found == 0) {
      return fail("'" + word + "' is neither a member nor a host of the view of epoch " + std::to_string(view.epoch()) +
                  " or of gossip's member list (`shoal members` lists them)");
    }
  }
  return std::vector<std::string>(out.begin(), out.end());
}

std::vector<std::string> next_excluded(const std::vector<std::string>& current, const std::set<std::string>& add,
                                       const std::set<std::string>& drop) {
  std::set<std::string> next(current.begin(), current.end());
  next.insert(add.begin(), add.end());
  for (const auto& n : drop) next.erase(n);
  return std::vector<std::string>(next.begin(), next.end());
}

Status check_exclusion(const View& view, const std::vector<std::string>& excluded, uint32_t min_hosts) {
  if (excluded.size() > kMaxViewExcluded) {
    return fail("a view may exclude at most " + std::to_string(kMaxViewExcluded) + " members, not " +
                std::to_string(excluded.size()));
  }
  size_t out = 0;
  for (const ViewMember& m : view.members()) {
    if (std::binary_search(excluded.begin(), excluded.end(), m.name)) ++out;
  }
  const size_t left = view.size() - out;
  if (left * 2 <= view.size()) {
    return fail("excluding " + std::to_string(out) + " of the " + std::to_string(view.size()) + " members of epoch " +
                std::to_string(view.epoch()) + " would leave " + std::to_string(left) + ", not a majority (at least " +
                std::to_string(view.size() / 2 + 1) + " must stay)");
  }
  if (left < std::max<uint32_t>(min_hosts, 1)) {
    return fail("excluding " + std::to_string(out) + " member(s) would leave " + std::to_string(left) +
                ", fewer than --min-hosts " + std::to_string(min_hosts));
  }
  return Ok{};
}

Status check_readmit(const std::vector<std::string>& excluded, const std::vector<std::string>& drop) {
  for (const auto& n : drop) {
    if (!std::binary_search(excluded.begin(), excluded.end(), n)) {
      return fail("'" + n + "' is not excluded (excluded: " + (excluded.empty() ? "none" : joined(excluded)) + ")");
    }
  }
  return Ok{};
}

PrecheckExclusion precheck_exclusion(const View& view, const std::vector<std::string>& flagged, uint32_t min_hosts) {
  PrecheckExclusion out;
  std::set<std::string> members;
  for (const auto& n : flagged) {
    if (view.find(n) != nullptr) members.insert(n);
  }
  if (members.empty()) return out;
  const auto next = next_excluded(view.excluded(), members, {});
  if (const Status ok = check_exclusion(view, next, min_hosts); !ok) {
    out.refused = ok.error().message;
    return out;
  }
  out.names.assign(members.begin(), members.end());
  return out;
}

}  // namespace shoal::membership
