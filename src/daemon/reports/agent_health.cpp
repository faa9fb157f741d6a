// The `health` control reply: the local trainer's latest node-health figures and straggler verdict.
#include "control/replies/health.hpp"
#include "daemon/agent.hpp"

namespace shoal::daemon {

std::string Agent::health_reply() const {
  control::HealthReply reply;
  reply.self = cfg_.name;
  reply.changes = health_.changes();
  const StragglerOptions defaults;
  const auto& latest = health_.latest();
  const StragglerOptions& r = latest ? latest->rule : defaults;
  reply.rule = {r.factor,      r.min_excess_ms, r.clear_factor, r.window_steps,
                r.min_samples, r.raise_after,   r.clear_after,  r.exchange_every};
  if (!latest) return control::write_reply(reply);
  reply.reported = true;
  reply.epoch = latest->epoch;
  reply.step = latest->step;
  reply.evaluations = latest->evaluations;
  reply.age_s = health_.age_s(std::chrono::steady_clock::now());
  for (const auto& h : latest->hosts) reply.hosts.push_back({h.name, h.compute_ms, h.wait_ms, h.samples, h.straggler});
  reply.stragglers = latest->stragglers;
  reply.dropped = {latest->dropped_records, latest->dropped_figures};
  return control::write_reply(reply);
}

}  // namespace shoal::daemon
