// Arming and firing of a runtime's single wake-up timer.
#include "net/wake_timer.hpp"

namespace shoal::net {

WakeTimer::WakeTimer(boost::asio::io_context& io, Clock::time_point origin, std::function<void()> on_fire)
    : timer_(io), origin_(origin), on_fire_(std::move(on_fire)) {}

void WakeTimer::arm(gossip::Time at) {
  if (cancelled_ || (armed_at_ && *armed_at_ <= at)) return;
  armed_at_ = at;
  const uint64_t seq = ++seq_;
  timer_.expires_at(origin_ + at);
  timer_.async_wait([this, seq](boost::system::error_code ec) {
    if (ec || seq != seq_ || cancelled_) return;
    armed_at_.reset();
    on_fire_();
  });
}

void WakeTimer::cancel() {
  cancelled_ = true;
  armed_at_.reset();
  timer_.cancel();
}

}  // namespace shoal::net
