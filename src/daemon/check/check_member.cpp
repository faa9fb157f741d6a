// A member's side of the pre-flight check: CHECK requests (compute probe, link probe to a peer) and the
// receiving end of CHECK_LINK, each probe on a thread of its own.
#include "daemon/check/check_member.hpp"

#include <boost/asio/post.hpp>

#include "base/log.hpp"
#include "base/warn_limiter.hpp"
#include "net/blocking_open.hpp"
#include "wire/frame.hpp"

namespace shoal::daemon::check {
namespace {

using Clock = std::chrono::steady_clock;

// Connecting to the peer of a link probe (and its handshake) must be done by then.
constexpr std::chrono::milliseconds kConnectTimeout{3000};

std::vector<std::byte> encode(const google::protobuf::MessageLite& m) {
  std::vector<std::byte> out(m.ByteSizeLong());
  m.SerializeToArray(out.data(), static_cast<int>(out.size()));
  return out;
}

wire::CheckResponse answer(wire::CheckResponse::Status status, std::string message) {
  wire::CheckResponse r;
  r.set_status(status);
  r.set_message(std::move(message));
  return r;
}

LinkProbeLimits limits_of(const wire::CheckRequest& r) {
  return capped(LinkProbeLimits{r.max_bytes(), std::chrono::milliseconds(r.max_ms()), r.pings()});
}

}  // namespace

CheckMember::CheckMember(boost::asio::io_context& io, net::StreamListener& listener, Hooks hooks)
    : io_(io), hooks_(std::move(hooks)) {
  listener.add_async_request_channel(
      wire::Hello::CHECK, kMaxRequestBytes, kMaxWait,
      [this, alive = std::weak_ptr<bool>(alive_)](const net::StreamPeer& peer, std::span<const std::byte> bytes,
                                                  net::StreamListener::Reply reply) -> std::function<void()> {
        if (alive.expired()) return {};
        return on_request(peer, bytes, std::move(reply));
      });
  listener.add_takeover_channel(
      wire::Hello::CHECK_LINK, kMaxRequestBytes,
      [this, alive = std::weak_ptr<bool>(alive_)](const net::StreamPeer& peer, std::span<const std::byte> bytes,
                                                  net::BlockingConn conn) {
        if (alive.expired()) return;
        on_link(peer, bytes, std::move(conn));
      });
}

CheckMember::~CheckMember() {
  alive_.reset();
  stop();
}

void CheckMember::stop() {
  stopping_ = true;
  std::list<Worker> workers;
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
  }
  for (auto& w : workers) w.thread.join();
}

bool CheckMember::in_view(const net::StreamPeer& peer) const {
  const auto* m = hooks_.view().find(peer.hello.name);
  return m != nullptr && m->generation == peer.hello.generation;
}

void CheckMember::reap() {
  std::lock_guard lock(mu_);
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void CheckMember::spawn(std::function<void()> work) {
  reap();
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(mu_);
  workers_.push_back(Worker{std::thread([work = std::move(work), done] {
                              work();
                              *done = true;
                            }),
                            done});
}

void CheckMember::run(std::function<wire::CheckResponse()> work, std::shared_ptr<net::StreamListener::Reply> reply,
                      bool* busy_flag) {
  *busy_flag = true;
  spawn([this, work = std::move(work), reply, busy_flag, alive = std::weak_ptr<bool>(alive_)] {
    auto response = work();
    boost::asio::post(io_, [alive, reply, busy_flag, bytes = encode(response)]() mutable {
      if (alive.expired()) return;
      *busy_flag = false;
      if (*reply) {
        auto r = std::move(*reply);
        *reply = nullptr;
        r(std::move(bytes));
      }
    });
  });
}

std::function<void()> CheckMember::on_request(const net::StreamPeer& peer, std::span<const std::byte> bytes,
                                              net::StreamListener::Reply reply) {
  wire::CheckRequest request;
  const auto refuse = [&](const std::string& why) -> std::function<void()> {
    ++refused_;
    if (const auto held = warn_.admit("check", Clock::now())) {
      log::agent().warn("check: refused a request from {} ({}): {} ({} more refusals held back)", peer.hello.name,
                        peer.remote, why, *held);
    }
    reply(encode(answer(wire::CheckResponse::REFUSED, why)));
    return {};
  };
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return refuse("a malformed request");
  if (!in_view(peer)) return refuse(peer.hello.name + " is not a member of this agent's committed view");
  if (stopping_) return refuse("the agent is stopping");
  auto held = std::make_shared<net::StreamListener::Reply>(std::move(reply));
  const auto forget = [held] { *held = nullptr; };

  if (request.kind() == wire::CheckRequest::COMPUTE) {
    if (!hooks_.compute) {
      ++refused_;
      (*held)(encode(answer(wire::CheckResponse::REFUSED, "no compute probe in this agent (an embedded agent has none)")));
      return {};
    }
    if (computing_) return refuse("a compute probe is running already");
    ++served_;
    run(
        [probe = hooks_.compute] {
          auto figure = probe();
          if (!figure) return answer(wire::CheckResponse::FAILED, figure.error().message);
          auto r = answer(wire::CheckResponse::OK, {});
          r.set_gflops(figure->gflops);
          r.set_matrix_n(figure->matrix_n);
          r.set_backend(figure->backend);
          return r;
        },
        held, &computing_);
    return forget;
  }
  if (request.kind() == wire::CheckRequest::LINK) {
    const auto* peer_member = hooks_.view().find(request.peer());
    if (peer_member == nullptr) return refuse("no member '" + request.peer() + "' in this agent's committed view");
    if (sending_) return refuse("a link probe is running already");
    ++served_;
    wire::CheckRequest onward;
    const auto limits = limits_of(request);
    onward.set_kind(wire::CheckRequest::LINK);
    onward.set_epoch(request.epoch());
    onward.set_max_bytes(limits.max_bytes);
    onward.set_max_ms(static_cast<uint32_t>(limits.max_time.count()));
    onward.set_pings(limits.pings);
    run(
        [this, to = peer_member->addr, hello = hooks_.link_hello(), onward, limits] {
          auto conn = net::open_blocking(to, hello, Clock::now() + kConnectTimeout, &stopping_);
          if (!conn) return answer(wire::CheckResponse::FAILED, "connecting to " + to + ": " + conn.error().message);
          if (auto w = conn->write_frame(wire::type_byte(wire::FrameType::request), encode(onward),
                                         Clock::now() + kConnectTimeout);
              !w) {
            return answer(wire::CheckResponse::FAILED, "to " + to + ": " + w.error().message);
          }
          auto measured = send_link_probe(*conn, limits, &stopping_);
          if (!measured) return answer(wire::CheckResponse::FAILED, "to " + to + ": " + measured.error().message);
          auto r = answer(wire::CheckResponse::OK, {});
          r.set_bytes(measured->bytes);
          r.set_elapsed_us(measured->elapsed_us);
          r.set_rtt_us(measured->rtt_us);
          r.set_rtt_min_us(measured->rtt_min_us);
          return r;
        },
        held, &sending_);
    return forget;
  }
  if (request.kind() == wire::CheckRequest::DONE) {
    ++served_;
    std::vector<std::string> flagged;
    for (const auto& name : request.flagged()) {
      if (flagged.size() < hooks_.view().size() && hooks_.view().find(name) != nullptr) flagged.push_back(name);
    }
    if (hooks_.on_done) hooks_.on_done(peer.hello.name, flagged);
    (*held)(encode(answer(wire::CheckResponse::OK, {})));
    return {};
  }
  return refuse("an unknown request kind");
}

void CheckMember::on_link(const net::StreamPeer& peer, std::span<const std::byte> bytes, net::BlockingConn conn) {
  wire::CheckRequest request;
  const bool ok = request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) &&
                  request.kind() == wire::CheckRequest::LINK;
  if (!ok || !in_view(peer) || stopping_ || receiving_.load() >= kMaxReceiving) {
    ++refused_;
    if (const auto held = warn_.admit("check-link", Clock::now())) {
      log::agent().warn("check: refused a link probe from {} ({}): {} ({} more refusals held back)", peer.hello.name,
                        peer.remote,
                        !ok              ? "malformed"
                        : !in_view(peer) ? "not a member of the committed view"
                                         : "busy or stopping",
                        *held);
    }
    return;  // closing the connection is the answer
  }
  ++served_;
  ++receiving_;
  auto held = std::make_shared<net::BlockingConn>(std::move(conn));  // std::function needs a copyable target
  spawn([this, held, limits = limits_of(request), from = peer.hello.name] {
    held->set_cancel(&stopping_);
    if (auto served = serve_link_probe(*held, limits); !served) {
      log::agent().debug("check: the link probe from {} failed: {}", from, served.error().message);
    }
    --receiving_;
  });
}

}  // namespace shoal::daemon::check
