// CheckRun: one pre-flight check that this agent coordinates over the members of its committed view, on the
// agent's loop: every member's compute probe at once, then the two rounds of link probes of
// health/check_plan.hpp (the pairs of a round at once), each request with a deadline, so that a member that
// does not answer is reported as such and waited for no longer. Every figure that comes back is checked
// against bounds (figure_bounds below); one out of range is dropped, counted and never judged. The verdict
// is health::judge_check's; the result is the `check` control reply.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "check.pb.h"
#include "control/replies/check.hpp"
#include "health/check_plan.hpp"
#include "membership/view.hpp"
#include "net/stream_client.hpp"
#include "net/stream_hello.hpp"

namespace shoal::daemon::check {

struct CheckOptions {
  double factor = 1.5;
  uint64_t bytes = 64u << 20;              // per link probe, at most
  std::chrono::milliseconds max_time{500};  // per link probe, at most
  uint32_t pings = 8;
  // How long a member may take to answer its compute probe, and a link probe beyond its max_time.
  std::chrono::milliseconds compute_deadline{5000};
  std::chrono::milliseconds link_allowance{5000};
};

// The limits a figure from the network must lie within to be used (the request's own limits included).
struct FigureBounds {
  static constexpr double kMaxGflops = 1e6;     // a PFLOP/s: no single host reaches it
  static constexpr uint32_t kMaxMatrixN = 1u << 16;
  static constexpr double kMaxGbps = 10000;     // 10 Tb/s
  static constexpr uint64_t kMaxRttUs = 10'000'000;
  static constexpr size_t kMaxTextBytes = 200;  // messages and backend names are cut there
};

// A member's compute answer as figures, or nullopt when out of bounds.
std::optional<double> valid_gflops(const wire::CheckResponse& r);
// A link answer's bandwidth in Gb/s, or nullopt when out of bounds for a probe of at most `max_bytes` and
// `max_time` (plus `allowance`).
std::optional<double> valid_link_gbps(const wire::CheckResponse& r, uint64_t max_bytes,
                                      std::chrono::milliseconds max_time, std::chrono::milliseconds allowance);

class CheckRun : public std::enable_shared_from_this<CheckRun> {
 public:
  using Done = std::function<void(control::CheckReply)>;

  // `view`: the committed view (at least one member); `hello` opens a CHECK connection.
  CheckRun(boost::asio::io_context& io, std::string self, membership::View view,
           std::function<net::OutgoingHello()> hello, CheckOptions options, Done done);

  // Starts the probes; `done` runs once, on the loop, with the reply.
  void start();

 private:
  void compute_phase();
  void link_round(uint32_t round, std::vector<health::LinkPair> pairs);
  void finish();
  void ask(const std::string& to, const wire::CheckRequest& request, std::chrono::milliseconds within,
           std::function<void(std::optional<wire::CheckResponse>, bool answered, const std::string& why)> then);

  boost::asio::io_context& io_;
  std::string self_;
  membership::View view_;
  std::function<net::OutgoingHello()> hello_;
  CheckOptions options_;
  Done done_;
  net::StreamClient client_;
  std::chrono::steady_clock::time_point started_;

  std::vector<health::CheckHostFigure> host_figures_;
  std::vector<control::CheckHostRow> host_rows_;
  std::vector<health::CheckLinkFigure> link_figures_;
  std::vector<control::CheckLinkRow> link_rows_;
  std::vector<health::LinkPair> round1_;
  uint64_t dropped_ = 0;
  size_t waiting_ = 0;
};

}  // namespace shoal::daemon::check
