// One pre-flight check coordinated from this agent: compute probes, two rounds of link probes, the verdict.
#include "daemon/check/check_run.hpp"

#include <cmath>

#include "base/log.hpp"
#include "daemon/check/link_probe.hpp"

namespace shoal::daemon::check {
namespace {

using Clock = std::chrono::steady_clock;

// Answers are small: a few numbers and a message.
constexpr size_t kMaxResponseBytes = 4096;

std::vector<std::byte> encode_message(const google::protobuf::MessageLite& m) {
  std::vector<std::byte> out(m.ByteSizeLong());
  m.SerializeToArray(out.data(), static_cast<int>(out.size()));
  return out;
}

// Text from the network, cut to a bound and to printable ASCII.
std::string bounded_text(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, FigureBounds::kMaxTextBytes)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

std::optional<double> valid_gflops(const wire::CheckResponse& r) {
  const double g = r.gflops();
  if (!std::isfinite(g) || g <= 0 || g > FigureBounds::kMaxGflops) return std::nullopt;
  if (r.matrix_n() == 0 || r.matrix_n() > FigureBounds::kMaxMatrixN) return std::nullopt;
  return g;
}

std::optional<double> valid_link_gbps(const wire::CheckResponse& r, uint64_t max_bytes,
                                      std::chrono::milliseconds max_time, std::chrono::milliseconds allowance) {
  const uint64_t max_us = static_cast<uint64_t>((max_time + allowance).count()) * 1000;
  if (r.bytes() == 0 || r.bytes() > max_bytes) return std::nullopt;
  if (r.elapsed_us() == 0 || r.elapsed_us() > max_us) return std::nullopt;
  if (r.rtt_us() == 0 || r.rtt_us() > FigureBounds::kMaxRttUs || r.rtt_min_us() == 0 ||
      r.rtt_min_us() > r.rtt_us()) {
    return std::nullopt;
  }
  const double gbps = double(r.bytes()) * 8 / double(r.elapsed_us()) / 1e3;
  if (!std::isfinite(gbps) || gbps > FigureBounds::kMaxGbps) return std::nullopt;
  return gbps;
}

CheckRun::CheckRun(boost::asio::io_context& io, std::string self, membership::View view,
                   std::function<net::OutgoingHello()> hello, CheckOptions options, Done done)
    : io_(io),
      self_(std::move(self)),
      view_(std::move(view)),
      hello_(std::move(hello)),
      options_(options),
      done_(std::move(done)),
      client_(io, 256) {
  const auto limits = capped(LinkProbeLimits{options_.bytes, options_.max_time, options_.pings});
  options_.bytes = limits.max_bytes;
  options_.max_time = limits.max_time;
  options_.pings = limits.pings;
}

void CheckRun::start() {
  started_ = Clock::now();
  const auto& members = view_.members();
  host_figures_.assign(members.size(), {});
  host_rows_.clear();
  for (const auto& m : members) {
    control::CheckHostRow row;
    row.name = m.name;
    row.addr = m.addr;
    host_rows_.push_back(std::move(row));
  }
  log::agent().info(
      "check: epoch {}, {} member(s): compute probes, then two rounds of link probes "
      "({} bytes, {} ms at most)",
      view_.epoch(), members.size(), options_.bytes, options_.max_time.count());
  compute_phase();
}

void CheckRun::ask(const std::string& to, const wire::CheckRequest& request, std::chrono::milliseconds within,
                   std::function<void(std::optional<wire::CheckResponse>, bool answered, const std::string& why)> then) {
  ++waiting_;
  client_.request(to, hello_(), encode_message(request), Clock::now() + within, kMaxResponseBytes,
                  [self = shared_from_this(), then = std::move(then)](std::optional<std::vector<std::byte>> response,
                                                                      const net::StreamFailure& failure) {
                    --self->waiting_;
                    if (!response) return then(std::nullopt, false, "no answer: " + failure.why);
                    wire::CheckResponse r;
                    if (!r.ParseFromArray(response->data(), static_cast<int>(response->size()))) {
                      return then(std::nullopt, false, "a malformed answer");
                    }
                    if (r.status() != wire::CheckResponse::OK) {
                      return then(std::nullopt, true, bounded_text(r.message().empty() ? "refused" : r.message()));
                    }
                    then(std::move(r), true, {});
                  });
}

void CheckRun::compute_phase() {
  const auto& members = view_.members();
  if (members.empty()) return finish();
  wire::CheckRequest request;
  request.set_kind(wire::CheckRequest::COMPUTE);
  request.set_epoch(view_.epoch());
  for (size_t i = 0; i < members.size(); ++i) {
    ask(members[i].addr, request, options_.compute_deadline,
        [this, i](std::optional<wire::CheckResponse> r, bool answered, const std::string& why) {
          auto& row = host_rows_[i];
          // A member that answered with a refusal (no compute probe there) did answer.
          host_figures_[i].answered = answered;
          if (!r) {
            row.error = why;
          } else {
            if (const auto g = valid_gflops(*r)) {
              host_figures_[i].gflops = g;
              row.gflops = g;
              row.matrix_n = r->matrix_n();
              row.backend = bounded_text(r->backend());
            } else {
              ++dropped_;
              row.error = "a compute figure out of range (dropped)";
            }
          }
          row.answered = host_figures_[i].answered;
          if (waiting_ == 0) link_round(1, health::first_round(view_.size()));
        });
  }
}

void CheckRun::link_round(uint32_t round, std::vector<health::LinkPair> pairs) {
  if (round == 1) round1_ = pairs;
  if (pairs.empty()) return round == 1 ? link_round(2, {}) : finish();
  const auto& members = view_.members();
  const size_t first = link_figures_.size();
  for (const auto& p : pairs) {
    link_figures_.push_back(health::CheckLinkFigure{p, round, std::nullopt, std::nullopt});
    control::CheckLinkRow row;
    row.a = members[p.a].name;
    row.b = members[p.b].name;
    row.round = round;
    link_rows_.push_back(std::move(row));
  }
  wire::CheckRequest request;
  request.set_kind(wire::CheckRequest::LINK);
  request.set_epoch(view_.epoch());
  request.set_max_bytes(options_.bytes);
  request.set_max_ms(static_cast<uint32_t>(options_.max_time.count()));
  request.set_pings(options_.pings);
  for (size_t k = 0; k < pairs.size(); ++k) {
    request.set_peer(members[pairs[k].b].name);
    const size_t at = first + k;
    ask(members[pairs[k].a].addr, request, options_.max_time + options_.link_allowance,
        [this, at, round, first, n = pairs.size()](std::optional<wire::CheckResponse> r, bool,
                                                    const std::string& why) {
          auto& row = link_rows_[at];
          if (!r) {
            row.error = why;
          } else if (const auto g =
                         valid_link_gbps(*r, options_.bytes, options_.max_time, options_.link_allowance)) {
            link_figures_[at].gbps = g;
            link_figures_[at].rtt_us = double(r->rtt_us());
            row.gbps = g;
            row.rtt_us = double(r->rtt_us());
            row.rtt_min_us = double(r->rtt_min_us());
            row.bytes = r->bytes();
            row.elapsed_ms = double(r->elapsed_us()) / 1000.0;
          } else {
            ++dropped_;
            row.error = "link figures out of range (dropped)";
          }
          if (waiting_ != 0) return;
          if (round == 2) return finish();
          std::vector<std::optional<double>> gbps;
          for (size_t i = first; i < first + n; ++i) gbps.push_back(link_figures_[i].gbps);
          const auto per_host = health::host_bandwidth(view_.size(), round1_, gbps);
          link_round(2, health::second_round(per_host, round1_));
        });
  }
}

void CheckRun::finish() {
  const auto verdict = health::judge_check(host_figures_, link_figures_, health::CheckRule{options_.factor});
  control::CheckReply reply;
  reply.self = self_;
  reply.epoch = view_.epoch();
  reply.factor = options_.factor;
  reply.bytes = options_.bytes;
  reply.max_ms = static_cast<uint32_t>(options_.max_time.count());
  reply.median_gflops = verdict.median_gflops;
  reply.median_gbps = verdict.median_gbps;
  reply.dropped = dropped_;
  for (size_t i = 0; i < host_rows_.size(); ++i) {
    auto row = host_rows_[i];
    const auto& v = verdict.hosts[i];
    row.flagged = v.flagged;
    if (v.compute_outlier) row.reasons.push_back("compute");
    if (v.network_slow) row.reasons.push_back("network");
    if (v.unreachable) row.reasons.push_back("unreachable");
    row.compute_ratio = v.compute_ratio;
    row.gbps = v.gbps;
    row.links = v.links;
    row.slow_links = v.slow_links;
    if (row.flagged) reply.flagged.push_back(row.name);
    reply.hosts.push_back(std::move(row));
  }
  for (size_t i = 0; i < link_rows_.size(); ++i) {
    auto row = link_rows_[i];
    row.slow = verdict.slow_links[i];
    if (row.slow) reply.slow_links.push_back(row.a + "-" + row.b);
    reply.links.push_back(std::move(row));
  }
  reply.elapsed_ms = ms_since(started_);
  if (dropped_ > 0) log::agent().warn("check: {} figure(s) from members were out of range and dropped", dropped_);
  log::agent().info("check: done in {:.0f} ms; flagged hosts: {}; slow links: {}", reply.elapsed_ms,
                    joined(reply.flagged), joined(reply.slow_links));
  // The members that wait for this check (--precheck) go on; nobody waits for their answers.
  wire::CheckRequest over;
  over.set_kind(wire::CheckRequest::DONE);
  over.set_epoch(view_.epoch());
  for (const auto& name : reply.flagged) over.add_flagged(name);
  for (const auto& m : view_.members()) {
    if (m.name != self_) ask(m.addr, over, std::chrono::seconds(2), [](auto&&...) {});
  }
  auto done = std::move(done_);
  done_ = nullptr;
  if (done) done(std::move(reply));
}

}  // namespace shoal::daemon::check
