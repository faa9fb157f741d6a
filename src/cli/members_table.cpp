// Rendering the member list as columns, self marked, refused inputs summarised on one line.
#include "cli/members_table.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace shoal::cli {

std::string render_members_table(const control::MembersReply& reply) {
  constexpr size_t kColumns = 5;
  std::vector<std::array<std::string, kColumns>> rows;
  rows.push_back({"NAME", "ADDR", "STATE", "INCARNATION", "GENERATION"});
  for (const auto& m : reply.members) {
    rows.push_back({m.name == reply.self ? m.name + " (self)" : m.name, m.addr, m.state, std::to_string(m.incarnation),
                    std::to_string(m.generation)});
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
  for (const auto& [cause, count] : reply.rejected.by_cause) {
    if (count > 0) rejected += (rejected.empty() ? "" : ", ") + cause + " " + std::to_string(count);
  }
  out += "rejected inputs: " + (rejected.empty() ? std::string("none") : rejected) + "\n";
  return out;
}

}  // namespace shoal::cli
