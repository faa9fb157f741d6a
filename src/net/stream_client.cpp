// One TCP request/response exchange per connection (after the handshake, in a keyed cluster), under a
// single deadline timer; requests past the in-flight bound wait in a FIFO queue with their deadlines.
#include "net/stream_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <deque>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "base/tcp_backoff.hpp"
#include "net/cloexec.hpp"
#include "net/frame_io.hpp"
#include "net/host_port.hpp"
#include "net/stream_hello.hpp"
#include "wire/frame_cipher.hpp"

namespace shoal::net {

// A request waiting for a free slot. Its timer fails it at its deadline if no slot frees before; the
// entry then stays in the queue, settled, until the queue reaches it.
struct QueuedRequest {
  QueuedRequest(asio::io_context& io) : timer(io) {}  // NOLINT(google-explicit-constructor)
  IpPort to;
  std::string to_text;
  OutgoingHello hello;
  std::vector<std::byte> request;
  StreamClient::Clock::time_point deadline;
  size_t max_response_bytes = 0;
  StreamClient::Done done;
  asio::steady_timer timer;
  bool settled = false;
};

struct StreamClient::State {
  State(asio::io_context& ctx, size_t in_flight_cap, size_t queue_cap)
      : io(ctx), max_in_flight(in_flight_cap), max_queued(queue_cap) {}
  asio::io_context& io;
  size_t max_in_flight;
  size_t max_queued;
  size_t in_flight = 0;
  uint64_t ever_queued = 0;
  bool closed = false;  // the client is gone: nothing queued starts any more
  std::deque<std::shared_ptr<QueuedRequest>> queue;
};

namespace {

using tcp = asio::ip::tcp;

void start_exchange(const std::shared_ptr<StreamClient::State>& state, const IpPort& to, const std::string& to_text,
                    const OutgoingHello& hello, std::vector<std::byte> request, StreamClient::Clock::time_point deadline,
                    size_t max_response_bytes, StreamClient::Done done);

// Starts queued requests while slots are free, first in first out; one whose deadline has passed fails.
void pump(const std::shared_ptr<StreamClient::State>& state) {
  while (!state->closed && state->in_flight < state->max_in_flight && !state->queue.empty()) {
    auto q = std::move(state->queue.front());
    state->queue.pop_front();
    if (q->settled) continue;
    q->settled = true;
    q->timer.cancel();
    if (StreamClient::Clock::now() >= q->deadline) {
      asio::post(state->io, [done = std::move(q->done)] { done(std::nullopt, StreamFailure{"timed out while queued", false}); });
      continue;
    }
    start_exchange(state, q->to, q->to_text, q->hello, std::move(q->request), q->deadline, q->max_response_bytes,
                   std::move(q->done));
  }
}

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(asio::io_context& io, std::shared_ptr<StreamClient::State> state, StreamClient::Done done)
      : socket_(io), timer_(io), state_(std::move(state)), done_(std::move(done)) {
    ++state_->in_flight;
  }

  void start(const IpPort& to, ConnectionOpening opening, std::vector<std::byte> request,
             StreamClient::Clock::time_point deadline, size_t max_response_bytes) {
    max_response_ = max_response_bytes;
    request_ = std::move(request);
    handshake_ = std::move(opening.handshake);
    out_ = frame_bytes(wire::type_byte(wire::FrameType::hello), opening.hello);
    if (!handshake_) {  // an open cluster: the request goes with the hello
      const auto req = frame_bytes(wire::type_byte(wire::FrameType::request), request_);
      out_.insert(out_.end(), req.begin(), req.end());
    }
    auto self = shared_from_this();
    timer_.expires_at(deadline);
    timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->complete(std::nullopt, "timed out");
    });
    const tcp::endpoint target(to.ip, to.port);
    boost::system::error_code open_ec;
    // Opened here so that the cap covers SYN retransmissions, and close-on-exec (net/cloexec.hpp); not left
    // to async_connect, which would open it without.
    open_cloexec(socket_, target.protocol(), open_ec);
    if (open_ec) {  // reported from the loop, as every other failure is: never inside the caller's send()
      return asio::post(socket_.get_executor(), [self, why = "socket: " + open_ec.message()] {
        self->complete(std::nullopt, why);
      });
    }
    net::cap_retransmission_backoff(socket_.native_handle());
    socket_.async_connect(target, [self](boost::system::error_code ec) {
      if (ec) return self->complete(std::nullopt, "connect: " + ec.message(), ec == asio::error::connection_refused);
      self->socket_.set_option(tcp::no_delay(true), ec);
      asio::async_write(self->socket_, asio::buffer(self->out_), [self](boost::system::error_code wec, size_t) {
        if (wec) return self->complete(std::nullopt, "send: " + wec.message());
        if (self->handshake_) return self->read_reply();
        self->read_response();
      });
    });
  }

 private:
  // Keyed: the server's handshake message, then ours and the sealed request in one write.
  void read_reply() {
    auto self = shared_from_this();
    async_read_frame(socket_, kMaxHandshakeFrameBytes, [self](Result<wire::Frame, FrameReadError> r) {
      if (!r) return self->complete(std::nullopt, "no handshake reply: " + read_failure(r.error()));
      if (r->type != wire::type_byte(wire::FrameType::handshake)) {
        return self->complete(std::nullopt, "expected a handshake reply, got frame type " + std::to_string(r->type));
      }
      auto finished = self->handshake_->finish(r->payload);
      if (!finished) return self->complete(std::nullopt, "handshake: " + finished.error().detail);
      self->frames_ = std::make_unique<wire::SealedFrames>(finished->keys);
      self->out_ = frame_bytes(wire::type_byte(wire::FrameType::handshake), finished->proof);
      self->frames_->send.append(self->out_, wire::type_byte(wire::FrameType::request), self->request_);
      asio::async_write(self->socket_, asio::buffer(self->out_), [self](boost::system::error_code wec, size_t) {
        if (wec) return self->complete(std::nullopt, "send: " + wec.message());
        self->read_response();
      });
    });
  }

  void read_response() {
    auto self = shared_from_this();
    const size_t limit = max_response_ + (frames_ ? wire::kFrameTagBytes : 0);
    async_read_frame(socket_, limit, [self](Result<wire::Frame, FrameReadError> r) {
      if (!r) {
        if (r.error().kind == FrameReadError::Kind::rejected)
          return self->complete(std::nullopt, "response: " + r.error().reject.detail);
        return self->complete(std::nullopt, "no response: " + read_failure(r.error()));
      }
      if (r->type != wire::type_byte(wire::FrameType::response)) {
        return self->complete(std::nullopt, "unexpected frame type " + std::to_string(r->type));
      }
      if (self->frames_) {
        if (auto opened = self->frames_->receive.open(*r); !opened) {
          return self->complete(std::nullopt, "response: " + opened.error().detail);
        }
      }
      self->complete(std::move(r->payload), "");
    });
  }

  static std::string read_failure(const FrameReadError& e) {
    if (e.kind == FrameReadError::Kind::rejected) return e.reject.detail;
    return e.ec ? e.ec.message() : std::string("truncated");
  }

  void complete(std::optional<std::vector<std::byte>> response, const std::string& why, bool refused = false) {
    if (finished_) return;
    finished_ = true;
    --state_->in_flight;
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.close(ignored);
    pump(state_);  // the freed slot goes to the oldest queued request before `done` can send a new one
    done_(std::move(response), StreamFailure{why, refused});
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  std::shared_ptr<StreamClient::State> state_;
  StreamClient::Done done_;
  std::vector<std::byte> out_;
  std::vector<std::byte> request_;
  std::optional<wire::ClientHandshake> handshake_;  // keyed: until the server's reply
  std::unique_ptr<wire::SealedFrames> frames_;      // keyed: after it
  size_t max_response_ = 0;
  bool finished_ = false;
};

void start_exchange(const std::shared_ptr<StreamClient::State>& state, const IpPort& to, const std::string& to_text,
                    const OutgoingHello& hello, std::vector<std::byte> request, StreamClient::Clock::time_point deadline,
                    size_t max_response_bytes, StreamClient::Done done) {
  auto ex = std::make_shared<Exchange>(state->io, state, std::move(done));
  ex->start(to, hello.open_to(to_text), std::move(request), deadline, max_response_bytes);
}

}  // namespace

StreamClient::StreamClient(asio::io_context& io, size_t max_in_flight, size_t max_queued)
    : io_(io), state_(std::make_shared<State>(io, max_in_flight, max_queued)) {}

StreamClient::~StreamClient() {
  state_->closed = true;
  for (auto& q : state_->queue) {
    q->settled = true;
    q->timer.cancel();
  }
  state_->queue.clear();
}

size_t StreamClient::in_flight() const { return state_->in_flight; }
size_t StreamClient::queued() const { return state_->queue.size(); }
uint64_t StreamClient::ever_queued() const { return state_->ever_queued; }

void StreamClient::request(const std::string& to, const OutgoingHello& hello, std::vector<std::byte> request,
                           Clock::time_point deadline, size_t max_response_bytes, Done done) {
  const auto target = parse_ip_port(to);
  const bool full = state_->in_flight >= state_->max_in_flight && state_->queue.size() >= state_->max_queued;
  if (!target || full) {
    const std::string why = !target ? "'" + to + "' is not a numeric ip:port" : "too many requests queued";
    asio::post(io_, [done = std::move(done), why] { done(std::nullopt, StreamFailure{why, false}); });
    return;
  }
  if (state_->in_flight < state_->max_in_flight && state_->queue.empty()) {
    start_exchange(state_, *target, to, hello, std::move(request), deadline, max_response_bytes, std::move(done));
    return;
  }
  auto q = std::make_shared<QueuedRequest>(io_);
  q->to = *target;
  q->to_text = to;
  q->hello = hello;
  q->request = std::move(request);
  q->deadline = deadline;
  q->max_response_bytes = max_response_bytes;
  q->done = std::move(done);
  q->timer.expires_at(deadline);
  q->timer.async_wait([q](boost::system::error_code ec) {
    if (ec || q->settled) return;
    q->settled = true;
    auto done = std::move(q->done);
    done(std::nullopt, StreamFailure{"timed out while queued", false});
  });
  state_->queue.push_back(std::move(q));
  ++state_->ever_queued;
}

}  // namespace shoal::net
