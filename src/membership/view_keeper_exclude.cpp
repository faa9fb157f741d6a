// ViewKeeper: the operator's exclusions (exclusion.hpp). The request is checked here, then proposed by this
// member through the ordinary rounds (evaluate and start_round read wanted_excluded()).
#include "base/log.hpp"
#include "base/str_cat.hpp"
#include "membership/exclusion.hpp"
#include "membership/view_keeper.hpp"

namespace shoal::membership {

Result<std::vector<std::string>> ViewKeeper::exclude(const std::vector<std::string>& exclude,
                                                     const std::vector<std::string>& readmit, Time now,
                                                     KeeperOutput& out) {
  if (view_.epoch() == 0) return fail(std::string("no view has been committed yet: there is nobody to exclude"));
  const ViewMember* me = view_.find(self_.name);
  if (me == nullptr || me->generation != self_.generation) {
    return fail("this member (" + self_.name + ") is not in the committed view of epoch " +
                std::to_string(view_.epoch()) + ": ask a member of it");
  }
  if (force_requested_) return fail(std::string("a forced view change is under way: try again once it is committed"));
  auto add = exclude.empty() ? Result<std::vector<std::string>>(std::vector<std::string>{})
                             : resolve_members(view_, gossip_, exclude);
  if (!add) return fail(add.error().message);
  auto drop = readmit.empty() ? Result<std::vector<std::string>>(std::vector<std::string>{})
                              : resolve_members(view_, gossip_, readmit);
  if (!drop) return fail(drop.error().message);
  std::set<std::string> adds = exclude_add_, drops = exclude_drop_;
  for (const auto& n : *add) adds.insert(n), drops.erase(n);
  const auto so_far = next_excluded(view_.excluded(), adds, drops);
  if (const Status ok = check_readmit(so_far, *drop); !ok) return fail(ok.error().message);
  for (const auto& n : *drop) drops.insert(n), adds.erase(n);
  const auto next = next_excluded(view_.excluded(), adds, drops);
  if (const Status ok = check_exclusion(view_, next, cfg_.min_hosts); !ok) return fail(ok.error().message);
  // A pending change already committed is no change: keep only what the committed list lacks or holds.
  exclude_add_.clear();
  exclude_drop_.clear();
  for (const auto& n : adds) {
    if (!view_.excludes(n)) exclude_add_.insert(n);
  }
  for (const auto& n : drops) {
    if (view_.excludes(n)) exclude_drop_.insert(n);
  }
  // A readmitted host joins at once: its removal's hold-down and failure count are the operator's to forgive.
  for (const auto& n : exclude_drop_) damper_.readmit(n);
  std::vector<std::string> named = *add;
  named.insert(named.end(), drop->begin(), drop->end());
  log::membership().warn("operator {} {} (epoch {}): proposing the next view",
                         exclude.empty() ? "readmits" : "excludes", joined(named), view_.epoch());
  backoff_until_ = now;
  evaluate(now, out);
  return named;
}

std::optional<std::vector<std::string>> ViewKeeper::wanted_excluded() const {
  if (!exclusion_pending()) return std::nullopt;
  return next_excluded(view_.excluded(), exclude_add_, exclude_drop_);
}

void ViewKeeper::exclusions_installed(const View& v) {
  for (auto it = exclude_add_.begin(); it != exclude_add_.end();) {
    it = v.excludes(*it) ? exclude_add_.erase(it) : std::next(it);
  }
  for (auto it = exclude_drop_.begin(); it != exclude_drop_.end();) {
    it = !v.excludes(*it) ? exclude_drop_.erase(it) : std::next(it);
  }
  for (const auto& n : view_.excluded()) {
    if (!v.excludes(n)) {
      damper_.readmit(n);
      log::membership().info("view epoch {} readmits {} (the operator's `shoal view readmit`)", v.epoch(), n);
    }
  }
  for (const auto& n : v.excluded()) {
    if (!view_.excludes(n)) {
      log::membership().warn(
          "view epoch {} excludes {} (the operator's `shoal view exclude`): it stays out of views "
          "until readmitted",
          v.epoch(), n);
    }
  }
}

}  // namespace shoal::membership
