// persisted_resume: the choice of the persisted step to resume from, and its split among the hosts.
#include "ckpt_shm/persisted_resume.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace shoal::ckpt {

std::vector<ResumeChoice> whole_persisted_steps(std::span<const PersistedCandidate> found, size_t max_steps) {
  // (step, world) -> rank -> copies. Only versions that name their world and a rank inside it.
  std::map<std::pair<uint64_t, uint32_t>, std::map<uint32_t, std::vector<PersistedCandidate>>> sets;
  for (const auto& c : found) {
    const auto& v = c.version;
    if (v.world == 0 || v.rank >= v.world) continue;
    sets[{v.step, v.world}][v.rank].push_back(c);
  }
  std::vector<ResumeChoice> out;
  // Newest step first; at one step, the larger world first.
  for (auto it = sets.rbegin(); it != sets.rend() && out.size() < max_steps; ++it) {
    const auto [step, world] = it->first;
    auto& by_rank = it->second;
    if (by_rank.size() != world) continue;  // keys are ranks < world: whole exactly when every rank is there
    if (!out.empty() && out.back().step == step) continue;  // a smaller whole world at a step chosen already
    ResumeChoice choice{step, world, {}};
    choice.ranks.reserve(world);
    for (auto& [rank, copies] : by_rank) {
      std::sort(copies.begin(), copies.end(), [](const PersistedCandidate& a, const PersistedCandidate& b) {
        return std::tuple(b.version.sequence, a.member, a.version.path) <
               std::tuple(a.version.sequence, b.member, b.version.path);
      });
      choice.ranks.push_back(std::move(copies));
    }
    out.push_back(std::move(choice));
  }
  return out;
}

std::optional<ResumeChoice> choose_resume(std::span<const PersistedCandidate> found) {
  auto whole = whole_persisted_steps(found, 1);
  if (whole.empty()) return std::nullopt;
  return std::move(whole.front());
}

std::vector<uint32_t> resume_ranks_for(const ResumeChoice& choice, std::vector<ResumeMember> members,
                                       const std::string& self) {
  std::vector<uint32_t> out;
  if (!among_first_members(members, self)) return out;
  std::vector<std::string> names;
  for (const auto& m : members) names.push_back(m.dir);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (uint32_t r = 0; r < choice.ranks.size(); ++r) {
    const auto& copies = choice.ranks[r];
    const auto writer = std::find_if(copies.begin(), copies.end(), [&](const PersistedCandidate& c) {
      return std::binary_search(names.begin(), names.end(), c.member);
    });
    const std::string& loader = writer != copies.end() ? writer->member : names[r % names.size()];
    if (loader == self) out.push_back(r);
  }
  return out;
}

bool among_first_members(const std::vector<ResumeMember>& members, const std::string& self) {
  const auto me = std::find_if(members.begin(), members.end(), [&](const ResumeMember& m) { return m.dir == self; });
  if (me == members.end()) return false;
  const uint64_t joined = me->join_epoch;
  return std::none_of(members.begin(), members.end(), [&](const ResumeMember& m) { return m.join_epoch < joined; });
}

}  // namespace shoal::ckpt
