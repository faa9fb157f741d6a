// Inbound TCP connections: hello (and the handshake, when keyed), then one request/response exchange on a
// registered channel.
#include "net/stream_listener.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "base/log.hpp"
#include "base/tcp_backoff.hpp"
#include "net/cloexec.hpp"
#include "net/frame_io.hpp"
#include "net/host_port.hpp"
#include "wire/frame_cipher.hpp"
#include "wire/sealed_packet.hpp"

namespace shoal::net {
namespace {
class StreamSession;
}

struct StreamListener::Shared {
  struct Channel {
    size_t max_request_bytes = 0;
    RequestHandler handler;             // set for request/response channels...
    AsyncRequestHandler async_handler;  // ...or this, for channels answered later
    std::chrono::milliseconds max_wait{0};
    TakeoverHandler takeover;  // ...or this, for channels that move bulk data on a thread of their own
  };
  std::string cluster_id;
  Limits limits;
  std::map<int, Channel> channels;
  std::shared_ptr<ClusterSeal> seal;  // null: an open cluster
  std::string own_addr;               // the advertised address, a destination hellos may name
  wire::RejectCounters rejected;
  log::WarnLimiter warn{std::chrono::seconds(10)};
  ConnectionBudget budget{ConnectionCaps{}};
  // The live sessions by ticket, so that an admission can close the one it evicts.
  std::map<ConnectionBudget::Ticket, std::weak_ptr<StreamSession>> sessions;

  void reject(wire::RejectCause cause, const std::string& remote, const std::string& detail) {
    rejected.add(cause);
    if (auto held = warn.admit(wire::name(cause), log::WarnLimiter::Clock::now())) {
      log::get(log::Component::agent)
          .warn("refused input from {} ({}: {}){}", remote, wire::name(cause), detail,
                *held ? fmt::format("; {} more of this kind since the last report", *held) : std::string());
    }
  }
};

namespace {

using tcp = asio::ip::tcp;

class StreamSession : public std::enable_shared_from_this<StreamSession> {
 public:
  StreamSession(tcp::socket socket, std::shared_ptr<StreamListener::Shared> shared)
      : socket_(std::move(socket)), shared_(std::move(shared)), timer_(socket_.get_executor()) {
    boost::system::error_code ec;
    const auto ep = socket_.remote_endpoint(ec);
    remote_ = ec ? std::string("?") : ip_port_text(ep.address(), ep.port());
    source_ = ec ? std::string("?") : ep.address().to_string();
  }

  // Admitted into the unauthenticated budget (perhaps closing an older unauthenticated connection), with
  // the hello deadline running; or refused at once when the budget is full of handshakes still in their
  // grace (a storm of members: the client retries later).
  void start() {
    auto self = shared_from_this();
    if (shared_->budget.full_for(source_)) {
      // An eviction is coming: a connection whose opening has arrived but not been read yet (a starved
      // loop reads late) counts as a handshake in progress, not as idle.
      for (const auto t : shared_->budget.idle()) {
        const auto it = shared_->sessions.find(t);
        if (it == shared_->sessions.end()) continue;
        if (auto s = it->second.lock(); s && s->has_bytes()) shared_->budget.progressed(t);
      }
    }
    const auto admission = shared_->budget.admit(source_, ConnectionBudget::Time::clock::now());
    ticket_ = admission.ticket;
    if (admission.refused) {
      fail(wire::RejectCause::overloaded,
           "connection refused: every unauthenticated slot holds a handshake younger than " +
               std::to_string(shared_->budget.caps().eviction_grace.count()) + " ms (caps: " +
               std::to_string(shared_->budget.caps().unauthenticated_per_source) + " per address, " +
               std::to_string(shared_->budget.caps().unauthenticated_total) + " in all)");
      return;
    }
    shared_->sessions[ticket_] = self;
    if (admission.evict) {
      if (const auto it = shared_->sessions.find(*admission.evict); it != shared_->sessions.end()) {
        if (auto older = it->second.lock()) {
          older->fail(wire::RejectCause::overloaded,
                      "unauthenticated connection closed for a newer one (caps: " +
                          std::to_string(shared_->budget.caps().unauthenticated_per_source) + " per address, " +
                          std::to_string(shared_->budget.caps().unauthenticated_total) + " in all)");
        }
      }
    }
    arm_deadline(shared_->limits.hello_timeout, "no finished hello within the time limit");
    async_read_frame(socket_, kMaxHelloBytes + wire::kSealOverheadBytes + wire::kHandshakeHelloPrefixBytes,
                     [self](Result<wire::Frame, FrameReadError> r) { self->on_hello(std::move(r)); });
  }

  // Bytes have arrived that were not read yet.
  bool has_bytes() {
    boost::system::error_code ec;
    return socket_.available(ec) > 0 && !ec;
  }

  // Closes the connection for a budget (counted and logged as `cause`).
  void fail(wire::RejectCause cause, const std::string& detail) {
    if (done_) return;
    shared_->reject(cause, remote_, detail);
    finish();
  }

 private:
  // (Re)arms the connection's one deadline; a stale expiry (cancelled by a re-arm) does nothing.
  void arm_deadline(std::chrono::milliseconds after, const char* what) {
    auto self = shared_from_this();
    const uint64_t token = ++deadline_token_;
    timer_.expires_after(after);
    timer_.async_wait([self, token, what](boost::system::error_code ec) {
      if (ec || self->done_ || token != self->deadline_token_) return;
      self->fail(wire::RejectCause::truncated, what);
    });
  }

  // The hello (open cluster) or the handshake's proof (keyed) checked out: the connection moves from the
  // unauthenticated budget to the authenticated one, with the exchange's own deadline.
  bool authenticated() {
    if (!shared_->budget.authenticate(ticket_)) {
      fail(wire::RejectCause::overloaded,
           "authenticated connection cap (" + std::to_string(shared_->budget.caps().authenticated) + ") reached");
      return false;
    }
    arm_deadline(shared_->limits.connection_timeout, "no complete exchange within the time limit");
    return true;
  }

  bool keyed() const { return shared_->seal && shared_->seal->keyed(); }

  void on_hello(Result<wire::Frame, FrameReadError> r) {
    if (!r) return on_read_error(r.error(), "hello");
    if (r->type != wire::type_byte(wire::FrameType::hello)) {
      return fail(wire::RejectCause::malformed, "first frame has type " + std::to_string(r->type) + ", not hello");
    }
    std::span<const std::byte> payload = r->payload;
    if (keyed()) {
      // The destinations this connection may name: where it arrived, and what this host advertises.
      boost::system::error_code ec;
      const auto local = socket_.local_endpoint(ec);
      const std::string arrived = ec ? std::string() : canonical_ip_port(local.address(), local.port());
      const std::array<std::string_view, 2> own = {arrived, shared_->own_addr};
      auto accepted = shared_->seal->accept_handshake(payload, own);
      if (!accepted) return fail(accepted.error().cause, "hello: " + accepted.error().detail);
      handshake_.emplace(std::move(*accepted));
      payload = handshake_->hello();
    } else if (wire::looks_sealed(payload)) {
      // An open cluster (no seal, or one without a key): a sealed hello comes from a keyed host, which is
      // told apart from garbage so that the operator sees the missing --key-file.
      return fail(wire::RejectCause::no_key, "hello: sealed with a cluster key, but this host has none (--key-file)");
    }
    auto hello = decode_hello(payload, shared_->cluster_id);
    if (!hello) return fail(hello.error().cause, "hello: " + hello.error().detail);
    const auto it = shared_->channels.find(hello->channel);
    if (it == shared_->channels.end()) {
      return fail(wire::RejectCause::bad_version,
                  "channel " + wire::Hello::Channel_Name(hello->channel) + " is not served here");
    }
    peer_.hello = std::move(*hello);
    peer_.remote = remote_;
    shared_->budget.progressed(ticket_);  // a well-formed opening: a handshake in progress, not an idle slot
    if (handshake_) return send_handshake_reply();
    // An open cluster has nothing to prove: a well-formed hello of this cluster is all there is.
    if (!authenticated()) return;
    read_request();
  }

  // Keyed: message 2 out, message 3 in; from then on every frame is sealed.
  void send_handshake_reply() {
    out_ = frame_bytes(wire::type_byte(wire::FrameType::handshake), handshake_->reply_message());
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_), [self](boost::system::error_code ec, size_t) {
      if (ec) return self->finish();
      async_read_frame(self->socket_, kMaxHandshakeFrameBytes,
                       [self](Result<wire::Frame, FrameReadError> r) { self->on_proof(std::move(r)); });
    });
  }

  void on_proof(Result<wire::Frame, FrameReadError> r) {
    if (!r) return on_read_error(r.error(), "handshake");
    if (r->type != wire::type_byte(wire::FrameType::handshake)) {
      return fail(wire::RejectCause::malformed,
                  "expected the handshake's proof, got frame type " + std::to_string(r->type));
    }
    auto keys = handshake_->finish(r->payload);
    if (!keys) return fail(keys.error().cause, "handshake: " + keys.error().detail);
    frames_ = std::make_unique<wire::SealedFrames>(*keys);
    handshake_.reset();
    if (!authenticated()) return;
    read_request();
  }

  void read_request() {
    const auto it = shared_->channels.find(peer_.hello.channel);
    if (it == shared_->channels.end()) return finish();
    const size_t limit = it->second.max_request_bytes + (frames_ ? wire::kFrameTagBytes : 0);
    auto self = shared_from_this();
    async_read_frame(socket_, limit,
                     [self](Result<wire::Frame, FrameReadError> r2) { self->on_request(std::move(r2)); });
  }

  void on_request(Result<wire::Frame, FrameReadError> r) {
    if (!r) return on_read_error(r.error(), "request");
    if (r->type != wire::type_byte(wire::FrameType::request)) {
      return fail(wire::RejectCause::malformed, "expected a request frame, got type " + std::to_string(r->type));
    }
    if (frames_) {
      if (auto opened = frames_->receive.open(*r); !opened) {
        return fail(opened.error().cause, "request: " + opened.error().detail);
      }
    }
    const auto it = shared_->channels.find(peer_.hello.channel);
    if (it == shared_->channels.end()) return finish();
    if (it->second.async_handler) return start_async(it->second, r->payload);
    if (it->second.takeover) return hand_over(it->second, r->payload);
    respond(it->second.handler(peer_, r->payload));
  }

  void respond(std::vector<std::byte> response) {
    if (done_ || replied_) return;
    replied_ = true;
    if (response.empty()) return finish();
    if (frames_) {
      out_.clear();
      frames_->send.append(out_, wire::type_byte(wire::FrameType::response), response);
    } else {
      out_ = frame_bytes(wire::type_byte(wire::FrameType::response), response);
    }
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_), [self](boost::system::error_code, size_t) { self->finish(); });
  }

  // The answer comes later: the deadline becomes the channel's max_wait, and a one-byte read notices a
  // peer that closes while waiting (a client that gave up), so the handler can forget the request.
  // The wait is held in the waiting budget, outside the authenticated one.
  void start_async(const StreamListener::Shared::Channel& channel, std::span<const std::byte> request) {
    auto self = shared_from_this();
    if (!shared_->budget.park(ticket_)) {
      return fail(wire::RejectCause::overloaded,
                  "waiting request cap (" + std::to_string(shared_->budget.caps().waiting) + ") reached");
    }
    const uint64_t token = ++deadline_token_;
    timer_.expires_after(channel.max_wait);
    timer_.async_wait([self, token](boost::system::error_code ec) {
      if (ec || self->done_ || token != self->deadline_token_) return;
      self->finish();
    });
    socket_.async_read_some(asio::buffer(probe_byte_), [self](boost::system::error_code, size_t) {
      if (!self->replied_) self->finish();  // the peer closed (or sent more than one request): drop it
    });
    on_abandon_ = channel.async_handler(
        peer_, request, [self](std::vector<std::byte> response) { self->respond(std::move(response)); });
  }

  // The connection leaves Asio: a duplicate of its descriptor goes to the handler, with the
  // connection's keys when it has them, and this session closes its own descriptor without shutting the
  // connection down.
  void hand_over(const StreamListener::Shared::Channel& channel, std::span<const std::byte> request) {
    const int fd = ::fcntl(socket_.native_handle(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return finish();
    replied_ = true;
    done_ = true;
    leave_budget();
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.close(ignored);
    BlockingConn conn(fd);
    // The ciphers with their counters: the request was opened here, the next frames go on from it.
    if (frames_) conn.adopt(std::move(frames_));
    channel.takeover(peer_, request, std::move(conn));
  }

  void on_read_error(const FrameReadError& e, const char* what) {
    if (done_) return;  // the deadline already counted this connection
    switch (e.kind) {
      case FrameReadError::Kind::closed:
        // A connection closed before sending a byte is not a malformed input (port checks do this);
        // one closed between hello and request is.
        if (std::string_view(what) == "hello") return finish();
        return fail(wire::RejectCause::truncated, "closed before the request");
      case FrameReadError::Kind::truncated:
        return fail(wire::RejectCause::truncated, std::string(what) + " cut short");
      case FrameReadError::Kind::rejected:
        return fail(e.reject.cause, std::string(what) + ": " + e.reject.detail);
      case FrameReadError::Kind::io:
        return finish();
    }
  }

  void leave_budget() {
    shared_->budget.release(ticket_);
    shared_->sessions.erase(ticket_);
  }

  void finish() {
    if (done_) return;
    done_ = true;
    leave_budget();
    if (!replied_ && on_abandon_) {
      auto abandon = std::move(on_abandon_);
      abandon();
    }
    on_abandon_ = nullptr;
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  tcp::socket socket_;
  std::shared_ptr<StreamListener::Shared> shared_;
  asio::steady_timer timer_;
  std::string remote_;
  std::string source_;  // the remote address without its port: what the per-address cap counts
  ConnectionBudget::Ticket ticket_ = 0;
  uint64_t deadline_token_ = 0;  // the deadline armed last; an expiry of an earlier one is stale
  StreamPeer peer_;
  std::vector<std::byte> out_;
  std::array<char, 1> probe_byte_{};
  std::function<void()> on_abandon_;
  std::optional<wire::ServerHandshake> handshake_;  // keyed: between the hello and the client's proof
  std::unique_ptr<wire::SealedFrames> frames_;      // keyed: after it
  bool replied_ = false;
  bool done_ = false;
};

}  // namespace

StreamListener::StreamListener(tcp::acceptor acceptor, std::string cluster_id, Limits limits)
    : acceptor_(std::move(acceptor)), retry_timer_(acceptor_.get_executor()), shared_(std::make_shared<Shared>()) {
  shared_->cluster_id = std::move(cluster_id);
  shared_->limits = limits;
  shared_->budget = ConnectionBudget(limits.caps);
}

StreamListener::~StreamListener() { close(); }

void StreamListener::add_request_channel(wire::Hello::Channel channel, size_t max_request_bytes,
                                         RequestHandler handler) {
  shared_->channels[channel] = Shared::Channel{max_request_bytes, std::move(handler), {}, {}, {}};
}

void StreamListener::add_async_request_channel(wire::Hello::Channel channel, size_t max_request_bytes,
                                               std::chrono::milliseconds max_wait, AsyncRequestHandler handler) {
  shared_->channels[channel] = Shared::Channel{max_request_bytes, {}, std::move(handler), max_wait, {}};
}

void StreamListener::add_takeover_channel(wire::Hello::Channel channel, size_t max_request_bytes,
                                          TakeoverHandler handler) {
  shared_->channels[channel] = Shared::Channel{max_request_bytes, {}, {}, {}, std::move(handler)};
}

const wire::RejectCounters& StreamListener::rejected() const { return shared_->rejected; }

const ConnectionBudget& StreamListener::budget() const { return shared_->budget; }

void StreamListener::set_seal(std::shared_ptr<ClusterSeal> seal, std::string own_addr) {
  shared_->seal = std::move(seal);
  shared_->own_addr = canonical_ip_port(own_addr);
}

void StreamListener::count_rejected(wire::RejectCause cause, const std::string& remote, const std::string& detail) {
  shared_->reject(cause, remote, detail);
}

void StreamListener::start() { accept_next(); }

void StreamListener::close() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retry_timer_.cancel();
  // Connections in flight finish on their own; no new requests reach the handlers.
  shared_->channels.clear();
}

void StreamListener::accept_next() {
  async_accept_cloexec(acceptor_, [this, shared = shared_](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!acceptor_.is_open()) return;
    if (ec) {
      log::get(log::Component::agent).warn("tcp: accept failed: {}; retrying", ec.message());
      retry_timer_.expires_after(std::chrono::milliseconds(100));
      retry_timer_.async_wait([this](boost::system::error_code tec) {
        if (!tec && acceptor_.is_open()) accept_next();
      });
      return;
    }
    // Every connection is admitted: the budget closes an older unauthenticated one when it must
    // (net/connection_budget.hpp), never an authenticated one.
    net::cap_retransmission_backoff(socket.native_handle());
    std::make_shared<StreamSession>(std::move(socket), shared)->start();
    accept_next();
  });
}

}  // namespace shoal::net
