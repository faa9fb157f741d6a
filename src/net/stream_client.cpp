// One TCP request/response exchange per connection (after the handshake, in a keyed cluster), under a
// single deadline timer.
#include "net/stream_client.hpp"

#include <boost/asio/ip/tcp.hpp>
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
namespace {

using tcp = asio::ip::tcp;

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(asio::io_context& io, std::shared_ptr<size_t> in_flight, StreamClient::Done done)
      : socket_(io), timer_(io), in_flight_(std::move(in_flight)), done_(std::move(done)) {
    ++*in_flight_;
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
    --*in_flight_;
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.close(ignored);
    done_(std::move(response), StreamFailure{why, refused});
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  std::shared_ptr<size_t> in_flight_;
  StreamClient::Done done_;
  std::vector<std::byte> out_;
  std::vector<std::byte> request_;
  std::optional<wire::ClientHandshake> handshake_;  // keyed: until the server's reply
  std::unique_ptr<wire::SealedFrames> frames_;      // keyed: after it
  size_t max_response_ = 0;
  bool finished_ = false;
};

}  // namespace

StreamClient::StreamClient(asio::io_context& io, size_t max_in_flight)
    : io_(io), max_in_flight_(max_in_flight), in_flight_(std::make_shared<size_t>(0)) {}

void StreamClient::request(const std::string& to, const OutgoingHello& hello, std::vector<std::byte> request,
                           Clock::time_point deadline, size_t max_response_bytes, Done done) {
  const auto target = parse_ip_port(to);
  if (!target || *in_flight_ >= max_in_flight_) {
    const std::string why = !target ? "'" + to + "' is not a numeric ip:port" : "too many requests in flight";
    asio::post(io_, [done = std::move(done), why] { done(std::nullopt, StreamFailure{why, false}); });
    return;
  }
  auto ex = std::make_shared<Exchange>(io_, in_flight_, std::move(done));
  ex->start(*target, hello.open_to(to), std::move(request), deadline, max_response_bytes);
}

}  // namespace shoal::net
