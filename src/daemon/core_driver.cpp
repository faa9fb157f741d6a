// The shared shell of the sans-IO cores: timer and requests in, answers back, nothing after stop().
#include "daemon/core_driver.hpp"

#include "base/log.hpp"

namespace shoal::daemon {

CoreDriver::CoreDriver(boost::asio::io_context& io, Clock::time_point origin, std::string what)
    : io_(io), origin_(origin), what_(std::move(what)), client_(io), timer_(io, origin, [this] {
        if (!stopped_) on_wake();
      }) {}

void CoreDriver::wake_at(std::optional<gossip::Time> at) {
  if (at && !stopped_) timer_.arm(*at);
}

void CoreDriver::request(const std::string& to, const net::OutgoingHello& hello, std::vector<std::byte> bytes,
                         gossip::Time deadline, size_t max_response_bytes, uint64_t token) {
  if (stopped_) return;
  client_.request(to, hello, std::move(bytes), origin_ + deadline, max_response_bytes,
                  [this, token, to](std::optional<std::vector<std::byte>> response, const net::StreamFailure& failure) {
                    if (stopped_) return;
                    if (!response) {
                      log::get(log::Component::agent).debug("{} to {} failed: {}", what_, to, failure.why);
                      if (failure.refused) {
                        on_refused(token);
                      } else {
                        on_answer(token, std::nullopt);
                      }
                      return;
                    }
                    on_answer(token, std::span<const std::byte>(*response));
                  });
}

void CoreDriver::stop() {
  stopped_ = true;
  timer_.cancel();
}

}  // namespace shoal::daemon
