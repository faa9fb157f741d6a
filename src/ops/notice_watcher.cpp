// NoticeWatcher: one bounded HTTP exchange per poll (resolve, connect, write, read under one deadline; the
// answer's size capped), AWS's IMDSv2 token kept until the service refuses it.
#include "ops/notice_watcher.hpp"

// GCC 12 sees boost::optional inside Beast's parser as maybe uninitialized (as in daemon/metrics_server.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/log.hpp"

namespace shoal::ops {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

}  // namespace

struct NoticeWatcher::Exchange : std::enable_shared_from_this<Exchange> {
  using Done = std::function<void(unsigned status, std::string body, std::string error)>;
  Exchange(asio::io_context& io, const NoticeWatcherConfig& cfg, const NoticeRequest& r, Done d)
      : resolver(io), stream(io), done(std::move(d)), deadline(cfg.exchange_deadline) {
    request.method_string(r.method);
    request.target(r.target);
    request.version(11);
    request.set(http::field::host, cfg.endpoint.host);
    request.set(http::field::connection, "close");
    for (const auto& [k, v] : r.headers) request.set(k, v);
    request.prepare_payload();
    parser.body_limit(cfg.max_response_bytes);
    parser.header_limit(static_cast<std::uint32_t>(std::min<size_t>(cfg.max_response_bytes, 16 * 1024)));
  }

  void run(const NoticeEndpoint& endpoint) {
    stream.expires_after(deadline);  // one deadline for the whole exchange
    resolver.async_resolve(endpoint.host, std::to_string(endpoint.port),
                           [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
                             if (ec) return self->finish("cannot resolve the metadata service: " + ec.message());
                             self->stream.async_connect(results, [self](beast::error_code ec2, const tcp::endpoint&) {
                               if (ec2) return self->finish("cannot connect: " + ec2.message());
                               self->send();
                             });
                           });
  }

  void send() {
    http::async_write(stream, request, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->finish("cannot send: " + ec.message());
      http::async_read(self->stream, self->buffer, self->parser, [self](beast::error_code ec2, size_t) {
        if (ec2) return self->finish("no answer: " + ec2.message());
        self->finish("");
      });
    });
  }

  void finish(std::string error) {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    const auto& response = parser.get();
    if (error.empty()) {
      done(response.result_int(), response.body(), "");
    } else {
      done(0, "", std::move(error));
    }
  }

  tcp::resolver resolver;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::request<http::empty_body> request;
  http::response_parser<http::string_body> parser;
  Done done;
  std::chrono::milliseconds deadline;
};

NoticeWatcher::NoticeWatcher(asio::io_context& io, NoticeWatcherConfig cfg, std::function<void(const std::string&)> on_notice)
    : io_(io), cfg_(std::move(cfg)), on_notice_(std::move(on_notice)), timer_(io) {}

NoticeWatcher::~NoticeWatcher() { stop(); }

void NoticeWatcher::start() {
  log::agent().info("drain: watching the {} preemption notice at http://{}:{}", cloud_name(cfg_.cloud),
                    cfg_.endpoint.host, cfg_.endpoint.port);
  poll();
}

void NoticeWatcher::stop() {
  stopped_ = true;
  alive_ = std::make_shared<bool>(false);
  timer_.cancel();
}

void NoticeWatcher::poll_later() {
  if (stopped_) return;
  timer_.expires_after(cfg_.poll_interval);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec && !stopped_) poll();
  });
}

void NoticeWatcher::poll() {
  const bool token_request = cfg_.cloud == Cloud::aws && aws_token_.empty();
  const NoticeRequest r = token_request ? aws_token_request() : notice_request(cfg_.cloud, aws_token_);
  auto exchange = std::make_shared<Exchange>(
      io_, cfg_, r, [this, token_request, alive = std::weak_ptr<bool>(alive_)](unsigned status, std::string body, std::string error) {
        const auto a = alive.lock();
        if (!a || !*a) return;
        answered(token_request, status, std::move(body), std::move(error));
      });
  exchange->run(cfg_.endpoint);
}

void NoticeWatcher::answered(bool token_request, unsigned status, std::string body, std::string error) {
  const auto warn = [this](const std::string& what) {
    if (const auto held = warn_.admit(what, std::chrono::steady_clock::now())) {
      log::agent().warn("drain: the {} notice: {} ({} such warning(s) held back)", cloud_name(cfg_.cloud), what, *held);
    }
  };
  if (!error.empty()) {
    warn(error);
    return poll_later();
  }
  if (token_request) {
    if (status == 200 && !body.empty()) {
      aws_token_ = std::move(body);
      return poll();
    }
    warn("no IMDSv2 token (HTTP " + std::to_string(status) + ")");
    return poll_later();
  }
  if (cfg_.cloud == Cloud::aws && status == 401) aws_token_.clear();  // expired: a new one at the next poll
  const NoticeVerdict v = read_notice(cfg_.cloud, status, body);
  if (v.drain) {
    log::agent().warn("drain: {}", v.why);
    stopped_ = true;
    on_notice_(v.why);
    return;
  }
  if (status != 200 && !(cfg_.cloud == Cloud::aws && status == 404)) warn(v.why);
  poll_later();
}

}  // namespace shoal::ops
