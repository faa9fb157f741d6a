// The safety and convergence properties of committed views, judged from the commits and acceptances the
// view layers report.
#include "view_safety_checker.hpp"

#include <cstdio>

#include "addresses.hpp"

namespace shoal::sim {
namespace {

constexpr size_t kMaxFindings = 8;

bool up(const Cluster& c, uint32_t m) {
  return c.status(m) == MemberStatus::running || c.status(m) == MemberStatus::paused;
}

}  // namespace

std::string brief(const membership::View& v) {
  char head[64];
  std::snprintf(head, sizeof head, "e=%llu h=%016llx [", static_cast<unsigned long long>(v.epoch()),
                static_cast<unsigned long long>(v.hash()));
  std::string out = head;
  for (size_t i = 0; i < v.members().size(); ++i) {
    if (i == 12) {
      out += " ... (" + std::to_string(v.size()) + ")";
      break;
    }
    const auto& m = v.members()[i];
    out += (i ? " " : "") + m.name + "/" + std::to_string(m.generation);
  }
  return out + "]";
}

void ViewSafetyChecker::note(std::string finding) {
  if (findings_.size() < kMaxFindings) findings_.push_back(std::move(finding));
}

const membership::View& ViewSafetyChecker::latest() const { return first_.empty() ? empty_ : first_.rbegin()->second; }

const membership::View* ViewSafetyChecker::view_of(uint64_t epoch) const {
  const auto it = first_.find(epoch);
  return it == first_.end() ? nullptr : &it->second;
}

void ViewSafetyChecker::on_accepted(uint32_t proposer, uint32_t voter, uint64_t voter_generation, uint64_t epoch,
                                    uint64_t hash, gossip::Time) {
  accepted_[{proposer, epoch, hash}].insert({voter, voter_generation});
}

void ViewSafetyChecker::on_commit(uint32_t member, uint64_t generation, const membership::View& view,
                                  gossip::Time now) {
  ++commits_;
  const uint64_t e = view.epoch();
  const bool fresh_hash = hashes_[e].insert(view.hash()).second;
  if (fresh_hash && hashes_[e].size() > 1) {
    ++divergences_;
    note(format_time(now) + " " + member_name(member) + " committed " + brief(view) + " but " + brief(first_.at(e)) +
         " was committed for that epoch before");
  }
  const bool first_for_epoch = first_.emplace(e, view).second;
  // One cluster, one lineage: set by epoch 1's proposer, copied by every later one (never 0).
  if (view.lineage() == 0 || (lineage_ && view.lineage() != *lineage_)) {
    if (fresh_hash) {
      ++divergences_;
      note(format_time(now) + " " + member_name(member) + " committed " + brief(view) + " of lineage " +
           std::to_string(view.lineage()) + (lineage_ ? ", not the cluster's " + std::to_string(*lineage_) : ""));
    }
  } else {
    lineage_ = view.lineage();
  }
  // The first commit of an epoch anywhere is the proposer's own install, right after its accept phase:
  // the acceptances it received are exactly what let it commit. Epoch 1 is a bootstrap (all members
  // accept, there is no earlier view), and the `any` policy does not promise a majority.
  if (!first_for_epoch || e <= 1 || policy_ != membership::QuorumPolicy::majority || forced_.count(e)) return;
  const membership::View* base = view_of(e - 1);
  if (base == nullptr) {
    ++minority_commits_;
    note(format_time(now) + " " + member_name(member) + " committed " + brief(view) +
         " though no member ever committed epoch " + std::to_string(e - 1));
    return;
  }
  const auto votes = accepted_.find({member, e, view.hash()});
  size_t yes = 0;
  for (const auto& bm : base->members()) {
    const auto idx = index_of_name(bm.name);
    if (!idx) continue;
    const bool self_vote = *idx == member && bm.generation == generation;
    const bool heard = votes != accepted_.end() && votes->second.count({*idx, bm.generation}) > 0;
    if (self_vote || heard) ++yes;
  }
  if (yes < base->size() / 2 + 1) {
    ++minority_commits_;
    note(format_time(now) + " " + member_name(member) + " committed " + brief(view) + " with " + std::to_string(yes) +
         " of " + std::to_string(base->size()) + " members of " + brief(*base) + " accepting");
  }
}

bool ViewSafetyChecker::converged(Cluster& c) {
  std::set<std::pair<std::string, uint64_t>> live;
  const membership::View* common = nullptr;
  for (uint32_t m = 0; m < c.size(); ++m) {
    if (!up(c, m)) continue;
    live.insert({member_name(m), c.generation(m)});
    const ViewLayer* layer = ViewKeepers::of(c, m);
    if (layer == nullptr) return false;
    const membership::View& v = layer->keeper().view();
    if (common == nullptr) {
      common = &v;
    } else if (v.hash() != common->hash()) {
      return false;
    }
  }
  if (common == nullptr) return true;  // nobody is up: nothing to agree on
  if (common->size() != live.size()) return false;
  for (const auto& vm : common->members()) {
    if (!live.count({vm.name, vm.generation})) return false;
  }
  return true;
}

std::optional<uint32_t> ViewSafetyChecker::majority_lost_stall(Cluster& c) {
  const membership::View* newest = nullptr;
  for (uint32_t m = 0; m < c.size(); ++m) {
    const ViewLayer* layer = up(c, m) ? ViewKeepers::of(c, m) : nullptr;
    if (layer != nullptr && (newest == nullptr || layer->keeper().view().epoch() > newest->epoch())) {
      newest = &layer->keeper().view();
    }
  }
  if (newest == nullptr || newest->epoch() == 0) return std::nullopt;
  size_t alive = 0;
  for (const auto& vm : newest->members()) {
    const auto idx = index_of_name(vm.name);
    if (idx && *idx < c.size() && up(c, *idx) && c.generation(*idx) == vm.generation) ++alive;
  }
  if (alive >= newest->size() / 2 + 1) return std::nullopt;
  std::optional<uint32_t> at;
  for (uint32_t m = 0; m < c.size(); ++m) {
    const ViewLayer* layer = up(c, m) ? ViewKeepers::of(c, m) : nullptr;
    if (layer == nullptr || layer->keeper().view().hash() != newest->hash()) continue;
    if (layer->keeper().status().phase != membership::KeeperPhase::stalled) return std::nullopt;
    if (!at) at = m;
  }
  return at;
}

bool ViewSafetyChecker::check_converged(Cluster& c) {
  if (converged(c)) return true;
  ++unconverged_;
  std::string what = format_time(c.now()) + " not converged:";
  for (uint32_t m = 0; m < c.size(); ++m) {
    if (!up(c, m)) continue;
    const ViewLayer* layer = ViewKeepers::of(c, m);
    what += " " + member_name(m) + "/" + std::to_string(c.generation(m)) + " holds " +
            (layer ? brief(layer->keeper().view()) + " (" + membership::to_string(layer->keeper().status().phase) +
                         ": " + layer->keeper().status().reason + ")"
                   : std::string("no keeper")) +
            ";";
  }
  note(what);
  return false;
}

}  // namespace shoal::sim
