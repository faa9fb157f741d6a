// Asynchronous seed resolution with backoff (see seed_resolver.hpp).
#include "daemon/seed_resolver.hpp"

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <set>

#include "base/log.hpp"
#include "daemon/srv_lookup.hpp"

namespace shoal::daemon {

namespace asio = boost::asio;

struct SeedResolver::State : std::enable_shared_from_this<SeedResolver::State> {
  struct Name {
    net::HostPort seed;
    std::chrono::milliseconds backoff{0};
    bool ever_resolved = false;
    int failures = 0;
    std::chrono::steady_clock::time_point looked_up{};  // the last lookup made
    std::unique_ptr<asio::steady_timer> timer;
  };

  State(asio::io_context& ctx, std::string own, Found f, Joining j, Timing t)
      : io(ctx), resolver(ctx), own_addr(std::move(own)), found(std::move(f)), joining(std::move(j)), timing(t) {}

  asio::io_context& io;
  asio::ip::tcp::resolver resolver;
  std::string own_addr;
  Found found;
  Joining joining;
  Timing timing;
  std::vector<Name> names;
  std::set<std::string> reported;
  size_t lookups = 0;
  bool stopped = false;
  // SRV lookups block (glibc's resolver): they run here, one at a time, off the event loop. Joined by stop().
  std::unique_ptr<asio::thread_pool> blocking;

  void resolve(size_t i) {
    if (stopped) return;
    auto self = shared_from_this();
    ++lookups;
    names[i].looked_up = std::chrono::steady_clock::now();
    const net::HostPort& seed = names[i].seed;
    if (seed.srv) {
      if (!blocking) blocking = std::make_unique<asio::thread_pool>(1);
      asio::post(*blocking, [self, i, name = seed.host] {
        auto got = lookup_srv(name, kMaxRecordsPerName);
        asio::post(self->io, [self, i, got = std::move(got)] { self->took(i, got); });
      });
      return;
    }
    resolver.async_resolve(seed.host, std::to_string(seed.port),
                           [self, i](boost::system::error_code ec, asio::ip::tcp::resolver::results_type results) {
                             if (ec) return self->took(i, fail(ec.message()));
                             std::vector<std::string> addrs;
                             append_ip_ports(results, self->names[i].seed.port, kMaxRecordsPerName, addrs);
                             self->took(i, std::move(addrs));
                           });
  }

  // A lookup's outcome: the addresses a name resolved to ("ip:port", bounded), or why it did not.
  void took(size_t i, const Result<std::vector<std::string>>& got) {
    if (stopped) return;
    Name& n = names[i];
    static const std::vector<std::string> kNone;
    const auto& addrs = got ? *got : kNone;
    std::vector<std::string> fresh;
    for (const auto& addr : addrs) {
      if (addr == own_addr) continue;  // ourselves: the name stays, this address does not
      if (reported.insert(addr).second) fresh.push_back(addr);
    }
    if (addrs.empty()) {
      ++n.failures;
      n.backoff = n.backoff.count() == 0 ? timing.first_retry : std::min(timing.max_retry, n.backoff * 2);
      // Logged at the first failure and then about once a minute, not at every retry.
      if (n.failures == 1 || n.failures % 8 == 0) {
        log::get(log::Component::agent)
            .warn("seed {} does not resolve ({}); retrying in {:.1f} s", n.seed.to_string(),
                  got ? std::string("no address") : got.error().message, n.backoff.count() / 1000.0);
      }
      arm(i, n.backoff);
    } else {
      if (n.failures > 0) {
        log::get(log::Component::agent).info("seed {} resolves now, after {} failed lookups", n.seed.to_string(), n.failures);
      }
      n.failures = 0;
      n.backoff = std::chrono::milliseconds(0);
      n.ever_resolved = true;
      if (i < kMaxRefreshed) arm(i, timing.refresh);  // looked up again: often while joining, rarely after
    }
    if (!fresh.empty()) found(std::move(fresh));
  }

  void arm(size_t i, std::chrono::milliseconds after) {
    auto self = shared_from_this();
    Name& n = names[i];
    if (!n.timer) n.timer = std::make_unique<asio::steady_timer>(io);
    n.timer->expires_after(after);
    n.timer->async_wait([self, i](boost::system::error_code ec) {
      if (ec || self->stopped) return;
      // A name that resolved once is refreshed every `refresh` while the agent looks for members, and once
      // `settled_refresh` has passed since its last lookup otherwise.
      const auto& n = self->names[i];
      if (n.ever_resolved && n.failures == 0 && !self->joining() &&
          std::chrono::steady_clock::now() - n.looked_up < self->timing.settled_refresh) {
        self->arm(i, self->timing.refresh);
        return;
      }
      self->resolve(i);
    });
  }
};

StartSeeds seeds_at_start(const std::vector<net::HostPort>& seeds, const std::string& own_addr, size_t lookups,
                          const std::function<std::optional<asio::ip::address>(const net::HostPort&)>& lookup) {
  StartSeeds out;
  for (const auto& seed : seeds) {
    boost::system::error_code ec;
    std::optional<asio::ip::address> ip = asio::ip::make_address(seed.host, ec);
    if (seed.srv) {  // SRV names are looked up in the background only (they block)
      out.maybe_peer = true;
      out.names.push_back(seed);
      continue;
    }
    if (ec) {
      ip = out.names.size() < lookups ? lookup(seed) : std::nullopt;
      if (!ip) out.maybe_peer = true;
      out.names.push_back(seed);
    }
    if (!ip) continue;
    std::string text = net::ip_port_text(*ip, seed.port);
    // Every host may be handed the same seed list; asking ourselves to join ourselves is pointless.
    if (text != own_addr && std::find(out.addrs.begin(), out.addrs.end(), text) == out.addrs.end()) {
      out.addrs.push_back(std::move(text));
    }
  }
  return out;
}

SeedResolver::SeedResolver(asio::io_context& io, std::vector<net::HostPort> names, std::string own_addr, Found found,
                           Joining joining, Timing timing)
    : state_(std::make_shared<State>(io, std::move(own_addr), std::move(found), std::move(joining), timing)) {
  for (auto& seed : names) state_->names.push_back(State::Name{std::move(seed), {}, false, 0, {}, nullptr});
}

SeedResolver::~SeedResolver() { stop(); }

size_t SeedResolver::lookups() const { return state_->lookups; }

void SeedResolver::start() {
  for (size_t i = 0; i < state_->names.size(); ++i) state_->resolve(i);
}

void SeedResolver::stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  state_->resolver.cancel();
  for (auto& n : state_->names) {
    if (n.timer) n.timer->cancel();
  }
  // A lookup in progress ends within the resolver's timeout (srv_lookup.cpp: 2 s per server); its answer
  // finds the state stopped.
  if (state_->blocking) state_->blocking->join();
}

}  // namespace shoal::daemon
