// Rendering the member list as columns, self marked, refused inputs summarised on one line.
#include "cli/members_table.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace shoal::cli {

Result<std::string> render_members_table(const control::JsonValue& doc) {
  const control::JsonValue* self = doc.find("self");
  const control::JsonValue* members = doc.find("members");
  if (self == nullptr || !self->as_string() || members == nullptr ||
      members->kind() != control::JsonValue::Kind::array) {
    return fail("the agent's reply is not a member list");
  }
  constexpr size_t kColumns = 5;
  std::vector<std::array<std::string, kColumns>> rows;
  rows.push_back({"NAME", "ADDR", "STATE", "INCARNATION", "GENERATION"});
  for (const auto& m : members->items()) {
    const auto text = [&](const char* key) -> std::string {
      const control::JsonValue* v = m.find(key);
      if (v == nullptr) return "?";
      if (auto s = v->as_string()) return *s;
      if (auto n = v->as_uint64()) return std::to_string(*n);
      return "?";
    };
    std::string name = text("name");
    if (name == *self->as_string()) name += " (self)";
    rows.push_back({name, text("addr"), text("state"), text("incarnation"), text("generation")});
  }
  std::array<size_t, kColumns> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < kColumns; ++c) {
      line += row[c];
      if (c + 1 < kColumns) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  std::string rejected;
  if (const control::JsonValue* r = doc.find("rejected")) {
    for (const auto& [cause, count] : r->members()) {
      const auto n = count.as_uint64();
      if (n && *n > 0) rejected += (rejected.empty() ? "" : ", ") + cause + " " + std::to_string(*n);
    }
  }
  out += "rejected inputs: " + (rejected.empty() ? std::string("none") : rejected) + "\n";
  return out;
}

}  // namespace shoal::cli
