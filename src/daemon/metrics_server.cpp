// Beast sessions for /metrics: read one request with a deadline, answer, close.
#include "daemon/metrics_server.hpp"

// GCC 12 with -fsanitize flags sees boost::optional inside Beast's header parser as maybe
// uninitialized (a false positive in Boost's code, not ours); -Werror would make it fatal. Clang has no
// such warning (and would warn about the pragma).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/log.hpp"
#include "net/cloexec.hpp"

namespace shoal::daemon {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

}  // namespace

struct MetricsServer::Session : std::enable_shared_from_this<Session> {
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::request<http::string_body> request;
  http::response<http::string_body> response;
  std::function<std::string()> render;
  std::shared_ptr<size_t> open_sessions;
  uint64_t* requests;

  Session(tcp::socket socket, std::function<std::string()> r, std::shared_ptr<size_t> open, uint64_t* count)
      : stream(std::move(socket)), render(std::move(r)), open_sessions(std::move(open)), requests(count) {
    ++*open_sessions;
  }
  ~Session() { --*open_sessions; }

  void start() {
    stream.expires_after(std::chrono::seconds(5));
    http::async_read(stream, buffer, request, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (!ec) self->answer();
    });
  }

  void answer() {
    ++*requests;
    response.version(request.version());
    response.set(http::field::server, "shoal");
    response.keep_alive(false);
    if (request.target() != "/metrics" && request.target() != "/") {
      response.result(http::status::not_found);
      response.set(http::field::content_type, "text/plain");
      response.body() = "not found: the metrics are at /metrics\n";
    } else if (request.method() != http::verb::get && request.method() != http::verb::head) {
      response.result(http::status::method_not_allowed);
      response.set(http::field::allow, "GET, HEAD");
      response.body() = "only GET\n";
    } else {
      response.result(http::status::ok);
      response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      response.body() = request.method() == http::verb::head ? std::string() : render();
    }
    response.prepare_payload();
    http::async_write(stream, response, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }
};

MetricsServer::MetricsServer(asio::io_context& io, std::function<std::string()> render)
    : io_(io), render_(std::move(render)), acceptor_(io) {}

MetricsServer::~MetricsServer() { close(); }

Status MetricsServer::open(const net::HostPort& bind) {
  beast::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(bind.host, std::to_string(bind.port), tcp::resolver::passive, ec);
  if (ec || results.empty()) return fail("--metrics " + bind.to_string() + ": cannot resolve '" + bind.host + "'");
  const tcp::endpoint ep = results.begin()->endpoint();
  net::open_cloexec(acceptor_, ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    const std::string why = ec.message();
    acceptor_.close(ec);
    return fail("--metrics " + bind.to_string() + ": cannot listen: " + why);
  }
  port_ = acceptor_.local_endpoint().port();
  log::agent().info("metrics at http://{}:{}/metrics", bind.host, port_);
  accept_next();
  return Ok{};
}

void MetricsServer::close() {
  beast::error_code ignored;
  acceptor_.close(ignored);
}

void MetricsServer::accept_next() {
  net::async_accept_cloexec(acceptor_, [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      if (*open_sessions_ >= kMaxConnections) {
        beast::error_code ignored;
        socket.close(ignored);  // a scraper holding many connections open gets no more
      } else {
        std::make_shared<Session>(std::move(socket), render_, open_sessions_, &requests_)->start();
      }
    }
    accept_next();
  });
}

}  // namespace shoal::daemon
