// Blocking rendezvous calls over the agent's TCP port, cancellable by a newer view.
#include "session/rendezvous_client.hpp"

#include <boost/asio/io_context.hpp>
#include <optional>
#include <thread>

#include "net/stream_client.hpp"
#include "shoal/errors.hpp"

namespace shoal::session {
namespace {

// How often a waiting call looks at `superseded`.
// How often a waiting exchange (and a pause between attempts) looks at `superseded`: a view change is
// on the recovery's critical path (a same-view rebuild waits here when the view that removes a dead
// member commits), so short; the slices cost nothing but a wake-up each.
constexpr std::chrono::milliseconds kPollSlice{2};
// A parked GET is answered by the server at its timeout; the client waits this much longer for that answer.
constexpr std::chrono::milliseconds kAnswerSlack{3000};
// A multi-get of many addresses; the server's per-epoch limit is the real bound.
constexpr size_t kMaxResponseBytes = 64u << 20;

std::string key_list(const google::protobuf::RepeatedPtrField<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

NetworkRendezvousStore::NetworkRendezvousStore(Options options) : opt_(std::move(options)) {}

wire::RendezvousResponse NetworkRendezvousStore::call(const wire::RendezvousRequest& request,
                                                      std::chrono::steady_clock::time_point deadline) {
  std::lock_guard lock(mu_);
  std::vector<std::byte> bytes(request.ByteSizeLong());
  request.SerializeToArray(bytes.data(), static_cast<int>(bytes.size()));
  std::string last_failure = "no attempt made";
  while (true) {
    if (opt_.superseded && opt_.superseded()) {
      throw ViewChanged(opt_.epoch, "the rendezvous was abandoned: a newer view or a failed member");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Timeout("rendezvous of epoch " + std::to_string(opt_.epoch) + " at " + opt_.store_addr +
                    ": no answer in time (" + last_failure + ")");
    }
    // A private loop per exchange: the calling thread runs it in slices so it can give up between them.
    boost::asio::io_context io;
    net::StreamClient client(io, 1);
    std::optional<std::vector<std::byte>> response;
    bool done = false;
    client.request(opt_.store_addr, opt_.hello, bytes, deadline, kMaxResponseBytes,
                   [&](std::optional<std::vector<std::byte>> r, const net::StreamFailure& failure) {
                     done = true;
                     response = std::move(r);
                     if (!response) last_failure = failure.why;
                   });
    while (!done) {
      io.run_for(kPollSlice);
      if (!done && opt_.superseded && opt_.superseded()) {
        throw ViewChanged(opt_.epoch, "the rendezvous was abandoned: a newer view or a failed member");
      }
    }
    if (!response) {
      // The store host is not reachable (yet, or any more): try again until the deadline or a newer view,
      // which the pause looks for in slices (the store host may be the member that died).
      const auto resume = std::chrono::steady_clock::now() + opt_.retry_pause;
      while (std::chrono::steady_clock::now() < resume && !(opt_.superseded && opt_.superseded())) {
        std::this_thread::sleep_for(kPollSlice);
      }
      continue;
    }
    wire::RendezvousResponse r;
    if (!r.ParseFromArray(response->data(), static_cast<int>(response->size()))) {
      throw Error("rendezvous of epoch " + std::to_string(opt_.epoch) + " at " + opt_.store_addr +
                  ": malformed response");
    }
    switch (r.status()) {
      case wire::RendezvousResponse::OK:
        return r;
      case wire::RendezvousResponse::VIEW_CHANGED:
        throw ViewChanged(opt_.epoch, r.message());
      case wire::RendezvousResponse::TIMEOUT:
        throw Timeout("rendezvous of epoch " + std::to_string(opt_.epoch) + ": " + r.message() +
                      "; missing: " + key_list(r.missing()));
      default:
        throw Error("rendezvous of epoch " + std::to_string(opt_.epoch) + " refused by " + opt_.store_addr + ": " +
                    r.message());
    }
  }
}

void NetworkRendezvousStore::set(const std::string& key, const comm::Bytes& value) {
  wire::RendezvousRequest req;
  req.set_epoch(opt_.epoch);
  req.set_op(wire::RendezvousRequest::SET);
  req.add_keys(key);
  req.set_value(value.data(), value.size());
  call(req, std::chrono::steady_clock::now() + opt_.set_timeout);
}

std::vector<comm::Bytes> NetworkRendezvousStore::multi_get(const std::vector<std::string>& keys,
                                                           std::chrono::milliseconds timeout) {
  wire::RendezvousRequest req;
  req.set_epoch(opt_.epoch);
  req.set_op(wire::RendezvousRequest::GET);
  for (const auto& k : keys) req.add_keys(k);
  req.set_timeout_ms(static_cast<uint32_t>(timeout.count()));
  const auto r = call(req, std::chrono::steady_clock::now() + timeout + kAnswerSlack);
  if (r.values_size() != static_cast<int>(keys.size())) {
    throw Error("rendezvous of epoch " + std::to_string(opt_.epoch) + ": asked for " + std::to_string(keys.size()) +
                " values, got " + std::to_string(r.values_size()));
  }
  std::vector<comm::Bytes> out;
  out.reserve(keys.size());
  for (const auto& v : r.values()) out.emplace_back(v.begin(), v.end());
  return out;
}

void NetworkRendezvousStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  wire::RendezvousRequest req;
  req.set_epoch(opt_.epoch);
  req.set_op(wire::RendezvousRequest::WAIT);
  for (const auto& k : keys) req.add_keys(k);
  req.set_timeout_ms(static_cast<uint32_t>(timeout.count()));
  call(req, std::chrono::steady_clock::now() + timeout + kAnswerSlack);
}

int64_t NetworkRendezvousStore::add(const std::string& key, int64_t delta) {
  wire::RendezvousRequest req;
  req.set_epoch(opt_.epoch);
  req.set_op(wire::RendezvousRequest::ADD);
  req.add_keys(key);
  req.set_delta(delta);
  return call(req, std::chrono::steady_clock::now() + opt_.set_timeout).number();
}

int64_t NetworkRendezvousStore::add_wait_change(const std::string& key, int64_t seen,
                                                std::chrono::milliseconds timeout) {
  wire::RendezvousRequest req;
  req.set_epoch(opt_.epoch);
  req.set_op(wire::RendezvousRequest::ADD);
  req.add_keys(key);
  req.set_wait_for_change(true);
  req.set_seen(seen);
  req.set_timeout_ms(static_cast<uint32_t>(timeout.count()));
  return call(req, std::chrono::steady_clock::now() + timeout + kAnswerSlack).number();
}

bool NetworkRendezvousStore::check(const std::vector<std::string>& keys) {
  wire::RendezvousRequest req;
  req.set_epoch(opt_.epoch);
  req.set_op(wire::RendezvousRequest::CHECK);
  for (const auto& k : keys) req.add_keys(k);
  return call(req, std::chrono::steady_clock::now() + opt_.set_timeout).number() == 1;
}

bool NetworkRendezvousStore::remove(const std::string& key) {
  wire::RendezvousRequest req;
  req.set_epoch(opt_.epoch);
  req.set_op(wire::RendezvousRequest::DELETE);
  req.add_keys(key);
  return call(req, std::chrono::steady_clock::now() + opt_.set_timeout).number() == 1;
}

int64_t NetworkRendezvousStore::num_keys(const std::string& prefix) {
  wire::RendezvousRequest req;
  req.set_epoch(opt_.epoch);
  req.set_op(wire::RendezvousRequest::NUM_KEYS);
  req.add_keys(prefix);
  return call(req, std::chrono::steady_clock::now() + opt_.set_timeout).number();
}

}  // namespace shoal::session
