// Agent: the drain. The local trainers learn it from the session feed, finish their step, save, wait until a
// peer holds that version and report it (`drained`); the member then leaves gracefully at that step boundary,
// once its newest versions are held by a peer, or at the drain's deadline whatever happened.
#include <boost/asio/post.hpp>
#include <charconv>

#include "base/log.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "daemon/agent.hpp"
#include "daemon/gossip_runtime.hpp"
#include "daemon/membership_runtime.hpp"
#include "daemon/session_feed.hpp"
#include "ranks/rank_table.hpp"

namespace shoal::daemon {
namespace {

// The longest a drain may be given.
constexpr std::chrono::milliseconds kDrainWithinMax{3'600'000};
// How often the wait for this host's replicas looks again.
constexpr std::chrono::milliseconds kReplicaPoll{10};

std::optional<uint64_t> parse_count(const std::string& s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

double seconds_of_ms(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

}  // namespace

void Agent::serve_drain_requests() {
  control_handlers_.add("drain",
                        "leave at a step boundary: the trainers finish the step, save, wait until a peer holds it, "
                        "then this member leaves gracefully: drain [WITHIN_MS] (default: --drain-within)",
                        [this](std::span<const std::string> args) { return drain_reply(args); }, control::Access::owner);
  control_handlers_.add("drained", "a local trainer finished its drain: drained SLOT STEP",
                        [this](std::span<const std::string> args) { return drained_reply(args); },
                        control::Access::local);
}

std::string Agent::drain_reply(std::span<const std::string> args) {
  std::chrono::milliseconds within = cfg_.drain_within;
  if (args.size() > 1) return control_handlers_.error_reply("usage: drain [WITHIN_MS]");
  if (args.size() == 1) {
    const auto ms = parse_count(args[0]);
    if (!ms || *ms == 0 || std::chrono::milliseconds(*ms) > kDrainWithinMax) {
      return control_handlers_.error_reply("drain: WITHIN_MS '" + args[0] + "' is not a number of milliseconds from 1 to " +
                                           std::to_string(kDrainWithinMax.count()));
    }
    within = std::chrono::milliseconds(*ms);
  }
  const Status st = drain(within, "shoal drain");
  control::DrainReply reply{st.ok(), std::nullopt, seconds_of_ms(within),
                            membership_ ? membership_->keeper().view().epoch() : 0};
  if (!st) reply.error = st.error().message;
  return control::write_reply(reply);
}

Status Agent::drain(std::chrono::milliseconds within, const std::string& why) {
  if (!membership_) return fail(std::string("the agent has not started"));
  if (leaving_) return fail(std::string("this member is already leaving"));
  const auto& view = membership_->keeper().view();
  if (view.epoch() == 0 || view.find(cfg_.name) == nullptr) {
    return fail("this member (" + cfg_.name + ") is in no committed view yet: there is no training to drain from " +
                "(stop it instead)");
  }
  if (view.size() < 2) {
    return fail("this member (" + cfg_.name + ") is the last member of the view of epoch " +
                std::to_string(view.epoch()) + ": nobody would take over its ranks (stop the job instead)");
  }
  const auto deadline = std::chrono::steady_clock::now() + within;
  if (draining_) {
    if (deadline < drain_deadline_) drain_deadline_ = deadline;  // a sooner notice wins
    return Ok{};
  }
  draining_ = true;
  drain_deadline_ = deadline;
  log::agent().info("drain ({}): the trainers finish their step, save and leave within {:.1f} s", why,
                    seconds_of_ms(within));
  session_feed_->on_drain();
  for (auto& observer : drain_observers_) observer(drain_deadline_);
  if (local_ranks().empty()) {
    leave_drained("no ranks on this host");
    return Ok{};
  }
  drain_timer_.expires_at(drain_deadline_);
  drain_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || drain_leaving_) return;
    log::agent().warn("drain: {} of {} rank(s) of this host reported done by the deadline: leaving anyway",
                      drained_slots_.size(), local_ranks().size());
    // A launcher (hold_exit_while) stops its workers at the deadline itself and then stops the agent.
    if (!exit_busy_) leave_drained("the drain's deadline passed");
  });
  return Ok{};
}

std::string Agent::drained_reply(std::span<const std::string> args) {
  const auto slot = args.size() == 2 ? parse_count(args[0]) : std::nullopt;
  const auto step = args.size() == 2 ? parse_count(args[1]) : std::nullopt;
  if (!slot || !step || *slot >= UINT32_MAX) {
    return control_handlers_.error_reply("usage: drained SLOT STEP (non-negative integers)");
  }
  if (!draining_) return control_handlers_.error_reply("drained: this member is not draining");
  drained_slot(static_cast<uint32_t>(*slot), *step);
  return control::write_reply(control::CommittedReply{true});
}

void Agent::drained_slot(uint32_t slot, uint64_t step) {
  asio::post(io_, [this, slot, step] { take_drained(slot, step); });
}

void Agent::take_drained(uint32_t slot, uint64_t step) {
  if (!draining_ || drain_leaving_) return;
  drained_slots_.insert(slot);
  log::agent().info("drain: slot {} is done at checkpoint step {}", slot, step);
  const auto ranks = local_ranks();
  if (drained_slots_.size() >= ranks.size()) leave_drained("every rank of this host is done");
}

void Agent::add_drain_observer(std::function<void(std::chrono::steady_clock::time_point)> observer) {
  drain_observers_.push_back(std::move(observer));
}

void Agent::hold_exit_while(std::function<bool()> busy) { exit_busy_ = std::move(busy); }

std::vector<uint32_t> Agent::local_ranks() const {
  std::vector<uint32_t> out;
  if (!membership_) return out;
  const auto& view = membership_->keeper().view();
  if (view.epoch() == 0) return out;
  const ranks::RankTable table(view);
  for (const auto& entry : table.ranks_of(cfg_.name)) out.push_back(entry.global_rank);
  return out;
}

bool Agent::replicas_pending() const {
  if (!checkpoints_) return false;
  for (const uint32_t rank : local_ranks()) {
    const auto s = checkpoints_->safety(rank);
    if (s.committed != 0 && s.holders > 0 && (!s.replicated || *s.replicated < s.committed)) return true;
  }
  return false;
}

void Agent::leave_drained(const std::string& why) {
  if (leaving_) return;
  drain_leaving_ = true;
  drain_timer_.cancel();
  // This host's newest versions reach their peers before it leaves: a survivor then restores the step the
  // drain stopped at, and redoes nothing.
  if (replicas_pending() && std::chrono::steady_clock::now() < drain_deadline_) {
    drain_timer_.expires_after(kReplicaPoll);
    drain_timer_.async_wait([this, why](boost::system::error_code ec) {
      if (ec) return;
      drain_leaving_ = false;
      leave_drained(why);
    });
    return;
  }
  if (replicas_pending()) log::agent().warn("drain: leaving with a newest checkpoint version not yet held by a peer");
  log::agent().info("drain: {}: leaving the cluster", why);
  begin_leave();
}

}  // namespace shoal::daemon
