// The Gloo communicator's send and receive, on Gloo's unbound buffers. A send or receive is posted on the
// caller's thread at once and waited for afterwards (at once by send/recv, on a thread of the
// communicator's by send_async/recv_async), so two ranks that each send to the other before receiving do
// not wait on each other. Buffers are copies: an aborted wait never leaves Gloo writing into the caller's.
#include <gloo/types.h>

#include <cstring>

#include "base/log.hpp"
#include "comm_wrap/gloo/gloo_communicator.hpp"

namespace shoal::comm {

namespace {

// Gloo's collectives use slot prefixes 0x01-0x08 (gloo/types.h); point to point uses its own.
constexpr uint8_t kPointToPointSlotPrefix = 0x53;

struct Posted {
  std::vector<char> bytes;
  std::shared_ptr<gloo::transport::UnboundBuffer> buf;
};

}  // namespace

std::shared_ptr<gloo::transport::UnboundBuffer> GlooCommunicator::post(const void* data, size_t bytes, int peer,
                                                                      uint32_t tag, bool sending) {
  check_rank(peer, sending ? "send peer" : "recv peer");
  if (peer == rank()) throw Error("gloo backend: rank " + std::to_string(rank()) + " cannot send to itself");
  if (aborted()) throw_aborted();
  std::shared_ptr<gloo::transport::UnboundBuffer> buf =
      context_->createUnboundBuffer(const_cast<void*>(data), bytes);
  {
    std::lock_guard lock(p2p_mu_);
    p2p_pending_.insert(buf.get());
  }
  try {
    const auto slot = gloo::Slot::build(kPointToPointSlotPrefix, tag);
    if (sending) {
      buf->send(peer, slot);
    } else {
      buf->recv(peer, slot);
    }
  } catch (const gloo::Exception& e) {
    {
      std::lock_guard lock(p2p_mu_);
      p2p_pending_.erase(buf.get());
    }
    fail(sending ? "send" : "recv", e.what(), false);
  }
  return buf;
}

void GlooCommunicator::settle(const std::shared_ptr<gloo::transport::UnboundBuffer>& buf, bool sending, int peer) {
  const char* what = sending ? "send" : "recv";
  std::string error;
  bool timed_out = false;
  bool completed = false;
  try {
    completed = sending ? buf->waitSend(options_.collective_timeout) : buf->waitRecv(options_.collective_timeout);
  } catch (const gloo::IoException& e) {
    error = e.what();
    timed_out = is_gloo_timeout(error);
  } catch (const gloo::Exception& e) {
    error = e.what();
  }
  {
    std::lock_guard lock(p2p_mu_);
    p2p_pending_.erase(buf.get());
  }
  if (aborted_.load()) throw_aborted();
  if (!error.empty()) fail(what, error + " (peer rank " + std::to_string(peer) + ")", timed_out);
  if (!completed) throw_aborted();  // woken by abortWait*: abort() is on its way
}

void GlooCommunicator::send(const void* data, size_t bytes, int peer, uint32_t tag) {
  auto posted = std::make_shared<Posted>();
  posted->bytes.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  posted->buf = post(posted->bytes.data(), bytes, peer, tag, true);
  settle(posted->buf, true, peer);
}

void GlooCommunicator::recv(void* data, size_t bytes, int peer, uint32_t tag) {
  auto posted = std::make_shared<Posted>();
  posted->bytes.resize(bytes);
  posted->buf = post(posted->bytes.data(), bytes, peer, tag, false);
  settle(posted->buf, false, peer);
  if (bytes > 0) std::memcpy(data, posted->bytes.data(), bytes);
}

std::shared_ptr<Work> GlooCommunicator::send_async(const void* data, size_t bytes, int peer, uint32_t tag) {
  auto self = std::static_pointer_cast<GlooCommunicator>(weak_from_this().lock());
  if (!self) throw Error("gloo backend: send_async needs a communicator owned by a std::shared_ptr");
  auto posted = std::make_shared<Posted>();
  posted->bytes.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  posted->buf = post(posted->bytes.data(), bytes, peer, tag, true);
  std::lock_guard lock(p2p_mu_);
  if (!p2p_waits_) p2p_waits_ = std::make_unique<detail::WorkQueue>();
  return p2p_waits_->push([self, posted, peer] { self->settle(posted->buf, true, peer); });
}

std::shared_ptr<Work> GlooCommunicator::recv_async(void* data, size_t bytes, int peer, uint32_t tag) {
  auto self = std::static_pointer_cast<GlooCommunicator>(weak_from_this().lock());
  if (!self) throw Error("gloo backend: recv_async needs a communicator owned by a std::shared_ptr");
  auto posted = std::make_shared<Posted>();
  posted->bytes.resize(bytes);
  posted->buf = post(posted->bytes.data(), bytes, peer, tag, false);
  std::lock_guard lock(p2p_mu_);
  if (!p2p_waits_) p2p_waits_ = std::make_unique<detail::WorkQueue>();
  return p2p_waits_->push([self, posted, peer, data, bytes] {
    self->settle(posted->buf, false, peer);
    if (bytes > 0) std::memcpy(data, posted->bytes.data(), bytes);
  });
}

}  // namespace shoal::comm
