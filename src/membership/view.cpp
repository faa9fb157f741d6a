// The View: validation, canonical order, canonical encoding and hash, lookups, log text.
#include "membership/view.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string_view>
#include <unordered_set>

namespace shoal::membership {

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Sorts a list of names kept out of the view (`what`: "evicted", "excluded"); the error when one is empty,
// twice on the list, or a member.
std::optional<std::string> sort_names_out(uint64_t epoch, std::vector<std::string>& list, const char* what,
                                          const std::unordered_set<std::string_view>& members) {
  std::sort(list.begin(), list.end());
  const std::string v = "view " + std::to_string(epoch) + ": ";
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].empty()) return v + "an " + what + " member has an empty name";
    if (i > 0 && list[i] == list[i - 1]) return v + "'" + list[i] + "' is " + what + " twice";
    if (members.count(list[i])) return v + "member '" + list[i] + "' is " + what + " and a member";
  }
  return std::nullopt;
}

bool canonical_less(const ViewMember& a, const ViewMember& b) {
  // std::string compares bytes as unsigned char, so the order is the same on every platform.
  if (a.join_epoch != b.join_epoch) return a.join_epoch < b.join_epoch;
  return a.name < b.name;
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view addr) {
  std::string_view host;
  std::string_view port;
  if (!addr.empty() && addr.front() == '[') {
    const size_t close = addr.find(']');
    if (close == std::string_view::npos || close + 1 >= addr.size() || addr[close + 1] != ':') {
      return fail("address '" + std::string(addr) + "' should be [v6-host]:port");
    }
    host = addr.substr(1, close - 1);
    port = addr.substr(close + 2);
  } else {
    const size_t colon = addr.rfind(':');
    if (colon == std::string_view::npos) return fail("address '" + std::string(addr) + "' has no :port");
    host = addr.substr(0, colon);
    port = addr.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return fail("address '" + std::string(addr) + "': an IPv6 host needs brackets, as in [::1]:7946");
    }
  }
  if (host.empty()) return fail("address '" + std::string(addr) + "' has an empty host");
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return fail("address '" + std::string(addr) + "' needs a port from 1 to 65535");
  }
  return Endpoint{std::string(host), static_cast<uint16_t>(value)};
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string canonical_encoding(uint64_t epoch, const std::vector<ViewMember>& members, uint64_t lineage,
                               const std::vector<std::string>& evicted, const std::vector<std::string>& excluded) {
  std::string out = lineage == 0 ? "shoal.view.v1" : "shoal.view.v2";
  put_u64(out, epoch);
  if (lineage != 0) put_u64(out, lineage);
  put_u64(out, members.size());
  for (const ViewMember& m : members) {
    put_str(out, m.name);
    put_str(out, m.host);
    put_str(out, m.addr);
    put_u32(out, m.slots);
    put_u64(out, m.join_epoch);
    put_u64(out, m.generation);
  }
  if (!evicted.empty()) {
    out += "evicted";
    put_u64(out, evicted.size());
    for (const auto& name : evicted) put_str(out, name);
  }
  if (!excluded.empty()) {
    out += "excluded";
    put_u64(out, excluded.size());
    for (const auto& name : excluded) put_str(out, name);
  }
  return out;
}

uint64_t first_lineage(const std::vector<ViewMember>& members, std::string_view proposer, uint64_t generation) {
  std::vector<ViewMember> sorted = members;
  std::sort(sorted.begin(), sorted.end(), canonical_less);
  std::string bytes = "shoal.lineage.v1" + canonical_encoding(1, sorted);
  put_str(bytes, proposer);
  put_u64(bytes, generation);
  const uint64_t h = fnv1a64(bytes);
  return h == 0 ? 1 : h;
}

View::View() : hash_(fnv1a64(canonical_encoding(0, {}))) {}

View::View(uint64_t epoch, std::vector<ViewMember> members, uint64_t lineage, std::vector<std::string> evicted,
           std::vector<std::string> excluded)
    : epoch_(epoch),
      lineage_(lineage),
      members_(std::move(members)),
      evicted_(std::move(evicted)),
      excluded_(std::move(excluded)),
      hash_(fnv1a64(canonical_encoding(epoch_, members_, lineage_, evicted_, excluded_))) {
  by_name_.resize(members_.size());
  for (uint32_t i = 0; i < by_name_.size(); ++i) by_name_[i] = i;
  std::sort(by_name_.begin(), by_name_.end(), [this](uint32_t a, uint32_t b) { return members_[a].name < members_[b].name; });
}

Result<View> View::make(uint64_t epoch, std::vector<ViewMember> members, uint64_t lineage,
                        std::vector<std::string> evicted, std::vector<std::string> excluded) {
  std::unordered_set<std::string_view> names;
  std::unordered_set<std::string_view> addrs;
  for (const ViewMember& m : members) {
    if (m.name.empty()) return fail("view " + std::to_string(epoch) + ": a member has an empty name");
    if (!names.insert(m.name).second) {
      return fail("view " + std::to_string(epoch) + ": member '" + m.name + "' appears twice");
    }
    if (m.host.empty()) return fail("view " + std::to_string(epoch) + ": member '" + m.name + "' has no host");
    if (auto ep = parse_endpoint(m.addr); !ep) {
      return fail("view " + std::to_string(epoch) + ": member '" + m.name + "': " + ep.error().message);
    }
    if (!addrs.insert(m.addr).second) {
      return fail("view " + std::to_string(epoch) + ": member '" + m.name + "' shares address " + m.addr +
                  " with another member");
    }
    if (m.slots > kMaxSlotsPerMember) {
      return fail("view " + std::to_string(epoch) + ": member '" + m.name + "' claims " + std::to_string(m.slots) +
                  " slots, more than " + std::to_string(kMaxSlotsPerMember));
    }
    if (m.join_epoch > epoch) {
      return fail("view " + std::to_string(epoch) + ": member '" + m.name + "' joined in later epoch " +
                  std::to_string(m.join_epoch));
    }
  }
  if (auto bad = sort_names_out(epoch, evicted, "evicted", names)) return fail(*bad);
  if (auto bad = sort_names_out(epoch, excluded, "excluded", names)) return fail(*bad);
  std::sort(members.begin(), members.end(), canonical_less);
  return View(epoch, std::move(members), lineage, std::move(evicted), std::move(excluded));
}

bool View::evicts(std::string_view name) const {
  return std::binary_search(evicted_.begin(), evicted_.end(), name, std::less<>());
}

bool View::excludes(std::string_view name) const {
  return std::binary_search(excluded_.begin(), excluded_.end(), name, std::less<>());
}

const ViewMember* View::find(std::string_view name) const {
  const auto i = index_of(name);
  return i ? &members_[*i] : nullptr;
}

std::optional<size_t> View::index_of(std::string_view name) const {
  const auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                                   [this](uint32_t i, std::string_view n) { return members_[i].name < n; });
  if (it == by_name_.end() || members_[*it].name != name) return std::nullopt;
  return *it;
}

uint64_t View::total_slots() const {
  uint64_t total = 0;
  for (const ViewMember& m : members_) total += m.slots;
  return total;
}

std::string View::to_string() const {
  char head[128];
  std::snprintf(head, sizeof head, "view e=%llu h=%016llx", static_cast<unsigned long long>(epoch_),
                static_cast<unsigned long long>(hash_));
  std::string out = head;
  if (lineage_ != 0) {
    std::snprintf(head, sizeof head, " l=%016llx", static_cast<unsigned long long>(lineage_));
    out += head;
  }
  out += " n=" + std::to_string(members_.size()) + " [";
  for (size_t i = 0; i < members_.size(); ++i) {
    const ViewMember& m = members_[i];
    if (i > 0) out += ", ";
    out += m.name + "(" + m.host + " " + m.addr + " s=" + std::to_string(m.slots) +
           " j=" + std::to_string(m.join_epoch) + " g=" + std::to_string(m.generation) + ")";
  }
  out += "]";
  if (!evicted_.empty()) {
    out += " evicted [";
    for (size_t i = 0; i < evicted_.size(); ++i) out += (i > 0 ? ", " : "") + evicted_[i];
    out += "]";
  }
  if (!excluded_.empty()) {
    out += " excluded [";
    for (size_t i = 0; i < excluded_.size(); ++i) out += (i > 0 ? ", " : "") + excluded_[i];
    out += "]";
  }
  return out;
}

}  // namespace shoal::membership
