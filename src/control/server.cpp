// Accepting control connections, reading one bounded request line, replying and closing.
#include "control/server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <memory>

#include "base/log.hpp"
#include "net/cloexec.hpp"

namespace shoal::control {
namespace {

using stream = asio::local::stream_protocol;

enum class Probe { nothing, live, stale, not_a_socket };

// Is someone serving `path`? A connect that is refused means the owner died without cleaning up.
Probe probe_socket_file(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Probe::nothing;
  if (!S_ISSOCK(st.st_mode)) return Probe::not_a_socket;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Probe::stale;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  ::close(fd);
  return rc == 0 ? Probe::live : Probe::stale;
}

// Who is at the other end of `socket`, from the kernel (SO_PEERCRED: the credentials of the process
// that connected, fixed at connect time).
Caller peer_of(stream::socket& socket) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
    return Caller{};
  }
  return Caller{static_cast<uint32_t>(cred.uid), static_cast<uint32_t>(cred.gid), static_cast<int32_t>(cred.pid), true};
}

// One client: read a line (bounded), write the reply, close.
class ControlSession : public std::enable_shared_from_this<ControlSession> {
 public:
  ControlSession(stream::socket socket, Caller caller, std::shared_ptr<void> slot, const ControlHandlers& handlers,
                 std::chrono::milliseconds timeout)
      : caller_(caller),
        slot_(std::move(slot)),
        socket_(std::move(socket)),
        handlers_(handlers),
        timer_(socket_.get_executor()),
        buf_(kMaxControlRequestBytes + 2),
        timeout_(timeout) {}

  void start() {
    auto self = shared_from_this();
    timer_.expires_after(timeout_);
    timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->reply(self->handlers_.error_reply("no request line within the time limit"));
    });
    asio::async_read_until(socket_, buf_, '\n', [self](boost::system::error_code ec, size_t n) {
      if (self->replied_) return;
      if (ec == asio::error::not_found) {
        self->reply(
            self->handlers_.error_reply("request longer than " + std::to_string(kMaxControlRequestBytes) + " bytes"));
        return;
      }
      if (ec && ec != asio::error::eof) {
        self->finish();
        return;
      }
      // At EOF without a newline the request is whatever arrived.
      std::string line(asio::buffers_begin(self->buf_.data()), asio::buffers_begin(self->buf_.data()) + n);
      if (ec == asio::error::eof)
        line.assign(asio::buffers_begin(self->buf_.data()), asio::buffers_end(self->buf_.data()));
      if (!line.empty() && line.back() == '\n') line.pop_back();
      const auto wait = self->handlers_.dispatch_async(
          line, [self](std::string doc) { self->reply(std::move(doc)); }, self->caller_);
      if (!wait) return self->reply(self->handlers_.dispatch(line, self->caller_));
      if (self->replied_) return;
      // A long poll: the handler answers within max_wait; past it (plus a margin), the client is told.
      self->timer_.expires_after(*wait + std::chrono::seconds(1));
      self->timer_.async_wait([self](boost::system::error_code tec) {
        if (!tec) self->reply(self->handlers_.error_reply("no answer within the time limit"));
      });
    });
  }

 private:
  void reply(std::string doc) {
    if (replied_) return;
    replied_ = true;
    timer_.cancel();
    boost::system::error_code ignored;
    socket_.cancel(ignored);  // a read still waiting for the request line (on timeout) ends here
    out_ = std::move(doc);
    out_ += '\n';
    auto self = shared_from_this();
    // The write is bounded by the same kind of deadline: a client that never reads is dropped.
    timer_.expires_after(timeout_);
    timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->finish();
    });
    asio::async_write(socket_, asio::buffer(out_), [self](boost::system::error_code ec, size_t) {
      if (ec) return self->finish();
      // Closing with unread request bytes would reset the connection and could destroy the reply
      // before the client reads it: half-close, then discard what is left until the client closes.
      boost::system::error_code ignored;
      self->socket_.shutdown(stream::socket::shutdown_send, ignored);
      self->drain();
    });
  }

  void drain() {
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(discard_), [self](boost::system::error_code ec, size_t) {
      if (ec) return self->finish();
      self->drain();
    });
  }

  void finish() {
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.shutdown(stream::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  Caller caller_;
  std::shared_ptr<void> slot_;  // this connection's place under the server's cap, given back at the end
  stream::socket socket_;
  const ControlHandlers& handlers_;
  asio::steady_timer timer_;
  asio::streambuf buf_;
  std::chrono::milliseconds timeout_;
  std::string out_;
  std::array<char, 4096> discard_{};
  bool replied_ = false;
};

}  // namespace

ControlServer::ControlServer(asio::io_context& io, const ControlHandlers& handlers)
    : handlers_(handlers), acceptor_(io) {}

ControlServer::~ControlServer() { close(); }

Status ControlServer::open(const std::string& path, std::optional<uint32_t> group) {
  if (path.empty()) return fail("the control socket path is empty");
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return fail("control socket path '" + path + "' is longer than the " +
                std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes a Unix socket allows");
  }
  switch (probe_socket_file(path)) {
    case Probe::live:
      return fail("another agent is already serving the control socket " + path);
    case Probe::not_a_socket:
      return fail(path + " exists and is not a socket; refusing to replace it");
    case Probe::stale:
      log::get(log::Component::agent).info("removing stale control socket {}", path);
      ::unlink(path.c_str());
      break;
    case Probe::nothing:
      break;
  }
  boost::system::error_code ec;
  net::open_cloexec(acceptor_, stream(), ec);
  if (!ec) acceptor_.bind(stream::endpoint(path), ec);
  if (ec) {
    acceptor_.close();
    return fail("cannot bind the control socket " + path + ": " + ec.message());
  }
  path_ = path;
  open_ = true;
  // Owner and group only; within them, handlers.hpp's Access decides per request.
  if (::chmod(path.c_str(), 0660) != 0) {
    const std::string why = std::strerror(errno);
    close();
    return fail("cannot set the mode of the control socket " + path + ": " + why);
  }
  if (group && ::chown(path.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(*group)) != 0) {
    const std::string why = std::strerror(errno);
    close();
    return fail("cannot give the control socket " + path + " to group " + std::to_string(*group) + ": " + why);
  }
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    close();
    return fail("cannot listen on the control socket " + path + ": " + ec.message());
  }
  accept_next();
  return Ok{};
}

void ControlServer::accept_next() {
  net::async_accept_cloexec(acceptor_, [this](boost::system::error_code ec, stream::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      const Caller caller = peer_of(socket);
      std::shared_ptr<void> slot;
      if (admit(socket, caller, slot)) {
        std::make_shared<ControlSession>(std::move(socket), caller, std::move(slot), handlers_, request_timeout)
            ->start();
      }
    }
    accept_next();
  });
}

bool ControlServer::admit(stream::socket& socket, const Caller& caller, std::shared_ptr<void>& slot) {
  const auto self = static_cast<uint32_t>(::geteuid());
  const bool other = !caller.known || (caller.uid != 0 && caller.uid != self);
  const size_t others_cap = max_connections - max_connections / 4;
  const size_t open = slots_->open.load(std::memory_order_relaxed);
  const size_t others = slots_->others.load(std::memory_order_relaxed);
  if (open < max_connections && (!other || others < others_cap)) {
    slots_->open.fetch_add(1, std::memory_order_relaxed);
    if (other) slots_->others.fetch_add(1, std::memory_order_relaxed);
    // The slot goes back when the session (which owns this token) ends.
    slot = std::shared_ptr<void>(nullptr, [slots = slots_, other](void*) {
      slots->open.fetch_sub(1, std::memory_order_relaxed);
      if (other) slots->others.fetch_sub(1, std::memory_order_relaxed);
    });
    return true;
  }
  refused_.fetch_add(1, std::memory_order_relaxed);
  const std::string why = other && open < max_connections
                              ? "callers other than the agent's user and root hold " + std::to_string(others) +
                                    " control connections, their share of " + std::to_string(max_connections)
                              : std::to_string(open) + " control connections are open, the most served at once";
  if (auto held = warn_.admit(other ? "others" : "all", log::WarnLimiter::Clock::now())) {
    log::get(log::Component::agent)
        .warn("control connection of uid {} (pid {}) refused: {}; {} refused since start{}", caller.uid, caller.pid,
              why, refused_.load(std::memory_order_relaxed),
              *held ? " (" + std::to_string(*held) + " more since the last report)" : std::string());
  }
  // One error line without waiting (a fresh socket's buffer holds it); then what the client sends is read
  // and dropped for a moment, so that closing does not reset the connection before the client has sent its
  // request and read the line. At most kMaxDraining refused connections linger so; past that they close
  // at once.
  const std::string doc = handlers_.error_reply("too many control connections: " + why + "; try again") + "\n";
  (void)::send(socket.native_handle(), doc.data(), doc.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  boost::system::error_code ignored;
  socket.shutdown(stream::socket::shutdown_send, ignored);
  if (draining_->load(std::memory_order_relaxed) >= kMaxDraining) {
    socket.close(ignored);
    return false;
  }
  struct Drain {
    stream::socket socket;
    asio::steady_timer timer;
    std::array<char, 256> discard{};
    std::shared_ptr<std::atomic<size_t>> count;
    Drain(stream::socket s, std::shared_ptr<std::atomic<size_t>> c)
        : socket(std::move(s)), timer(socket.get_executor()), count(std::move(c)) {
      count->fetch_add(1, std::memory_order_relaxed);
    }
    ~Drain() { count->fetch_sub(1, std::memory_order_relaxed); }
    static void read(const std::shared_ptr<Drain>& d) {
      d->socket.async_read_some(asio::buffer(d->discard), [d](boost::system::error_code ec, size_t) {
        if (ec) {
          d->timer.cancel();
          return;
        }
        read(d);
      });
    }
  };
  auto drain = std::make_shared<Drain>(std::move(socket), draining_);
  drain->timer.expires_after(std::chrono::milliseconds(500));
  drain->timer.async_wait([drain](boost::system::error_code ec) {
    if (ec) return;
    boost::system::error_code ignored_close;
    drain->socket.close(ignored_close);  // the pending read ends with an error and lets go of it
  });
  Drain::read(drain);
  return false;
}

void ControlServer::close() {
  if (!open_) return;
  open_ = false;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  ::unlink(path_.c_str());
}

}  // namespace shoal::control
