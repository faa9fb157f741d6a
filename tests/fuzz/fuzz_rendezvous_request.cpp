// Fuzz target: the rendezvous store's requests as RendezvousService receives them (one RendezvousRequest
// per connection, parsed with ParseFromArray, handed to comm::RendezvousTable), interleaved with the
// service's other inputs. The input is a sequence of chunks [op][length u8][bytes], p = op >> 2:
//   op & 3 == 0: bytes are a request (a new waiter)   1: the committed epoch advances by p % 4
//            2: time advances by p * 50 ms, then expire   3: the waiter p % waiting is cancelled
// The table runs with small limits, checked against a model of what was set (per epoch, key: value).
// Asserts: every answer has a status and the table's epoch; GET's values are the model's, WAIT and
// SET carry none; a request is parked only while one of its keys is missing and is answered once,
// by a set (OK), a later epoch (VIEW_CHANGED) or its deadline (TIMEOUT, naming keys still missing);
// the counters (ADD: the model's decimal value plus delta; a long poll parked only while the value is
// the one it saw, answered OK with the value when it moves or at its deadline), CHECK, DELETE and
// NUM_KEYS answer what the model says; waiters and epochs held stay within the limits.
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comm_wrap/stores/rendezvous_table.hpp"

namespace {

using shoal::comm::RendezvousTable;
using shoal::wire::RendezvousRequest;
using shoal::wire::RendezvousResponse;

RendezvousTable::Limits limits() {
  RendezvousTable::Limits l;
  l.max_keys_per_epoch = 8;
  l.max_value_bytes = 64;
  l.max_bytes_per_epoch = 256;
  l.max_future_epochs = 3;
  l.max_waiters = 4;
  l.max_timeout_ms = 1000;
  return l;
}

struct Harness {
  RendezvousTable table{limits()};
  std::map<uint64_t, std::map<std::string, std::string>> model;  // epoch -> key -> value, as set
  std::map<RendezvousTable::Waiter, RendezvousRequest> parked;
  RendezvousTable::Waiter next_waiter = 1;
  RendezvousTable::Time now{0};

  bool all_set(const RendezvousRequest& r) const {
    const auto e = model.find(r.epoch());
    for (const auto& k : r.keys()) {
      if (e == model.end() || !e->second.contains(k)) return false;
    }
    return true;
  }

  // An OK answer to `r`, now or later: GET gets the model's values in order, WAIT nothing.
  void check_ok(const RendezvousRequest& r, const RendezvousResponse& a) const {
    if (r.op() == RendezvousRequest::GET) {
      if (a.values_size() != r.keys_size()) __builtin_trap();
      const auto& values = model.at(r.epoch());
      for (int i = 0; i < r.keys_size(); ++i) {
        if (values.at(r.keys(i)) != a.values(i)) __builtin_trap();
      }
    } else if (a.values_size() != 0) {
      __builtin_trap();
    }
  }

  // The model's counter at `key` (absent: 0), or nullopt when it holds other bytes.
  std::optional<int64_t> counter(uint64_t epoch, const std::string& key) const {
    const auto e = model.find(epoch);
    if (e == model.end() || !e->second.contains(key)) return int64_t{0};
    const std::string& text = e->second.at(key);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
  }

  static bool long_poll(const RendezvousRequest& r) {
    return r.op() == RendezvousRequest::ADD && r.wait_for_change() && r.delta() == 0;
  }

  // An OK answer to one of the store operations (ADD, CHECK, DELETE, NUM_KEYS), checked against the
  // model as it was before the request and then applied to it.
  void store_op(const RendezvousRequest& r, const RendezvousResponse& a) {
    auto& values = model[r.epoch()];
    switch (r.op()) {
      case RendezvousRequest::ADD: {
        const auto before = counter(r.epoch(), r.keys(0));
        if (!before || a.number() != *before + (long_poll(r) ? 0 : r.delta())) __builtin_trap();
        if (!long_poll(r)) values[r.keys(0)] = std::to_string(a.number());
        break;
      }
      case RendezvousRequest::CHECK:
        if (a.number() != (all_set(r) ? 1 : 0)) __builtin_trap();
        break;
      case RendezvousRequest::DELETE:
        if (a.number() != (values.erase(r.keys(0)) == 1 ? 1 : 0)) __builtin_trap();
        break;
      case RendezvousRequest::NUM_KEYS: {
        int64_t n = 0;
        for (const auto& [k, v] : values) n += k.starts_with(r.keys(0)) ? 1 : 0;
        if (a.number() != n) __builtin_trap();
        break;
      }
      default:
        __builtin_trap();
    }
  }

  void check_answer(const RendezvousResponse& a) const {
    if (a.status() == RendezvousResponse::STATUS_UNSPECIFIED || a.current_epoch() != table.epoch()) __builtin_trap();
  }

  void deliver(std::vector<RendezvousTable::Reply>& replies) {
    for (const auto& reply : replies) {
      auto it = parked.find(reply.waiter);
      if (it == parked.end()) __builtin_trap();  // never parked, cancelled, or answered before
      const RendezvousRequest& r = it->second;
      const RendezvousResponse& a = reply.response;
      check_answer(a);
      switch (a.status()) {
        case RendezvousResponse::OK:
          if (long_poll(r)) {  // the counter moved, or its deadline came: the value as it is now
            const auto now_value = counter(r.epoch(), r.keys(0));  // other bytes now: the value it saw
            if (a.number() != now_value.value_or(r.seen())) __builtin_trap();
            break;
          }
          if (!all_set(r)) __builtin_trap();
          check_ok(r, a);
          break;
        case RendezvousResponse::VIEW_CHANGED:
          if (r.epoch() >= table.epoch()) __builtin_trap();
          break;
        case RendezvousResponse::TIMEOUT:
          if (a.missing_size() == 0 || all_set(r)) __builtin_trap();
          break;
        default:
          __builtin_trap();
      }
      parked.erase(it);
    }
    replies.clear();
  }

  void request(const uint8_t* data, size_t size) {
    RendezvousRequest r;
    if (!r.ParseFromArray(data, static_cast<int>(size))) return;  // the service closes the connection
    const auto waiter = next_waiter++;
    const bool was_set = all_set(r);
    std::vector<RendezvousTable::Reply> completed;
    auto answer = table.handle(waiter, r, now, completed);
    if (!answer) {
      const bool wait = r.op() == RendezvousRequest::GET || r.op() == RendezvousRequest::WAIT;
      if (long_poll(r)) {
        const auto value = counter(r.epoch(), r.keys(0));
        if (!value || *value != r.seen() || r.epoch() < table.epoch()) __builtin_trap();
      } else if (!wait || was_set || r.epoch() < table.epoch() || r.keys().empty()) {
        __builtin_trap();
      }
      parked.emplace(waiter, r);
    } else {
      check_answer(*answer);
      if (answer->status() == RendezvousResponse::OK) {
        if (r.op() == RendezvousRequest::SET) {
          if (r.keys_size() != 1 || answer->values_size() != 0) __builtin_trap();
          model[r.epoch()][r.keys(0)] = r.value();
        } else if (r.op() == RendezvousRequest::GET || r.op() == RendezvousRequest::WAIT) {
          if (!was_set) __builtin_trap();
          check_ok(r, *answer);
        } else {
          store_op(r, *answer);
        }
      }
    }
    deliver(completed);
  }

  void check() const {
    const auto& l = limits();
    if (table.waiting() != parked.size() || table.waiting() > l.max_waiters) __builtin_trap();
    if (table.epochs_held() > l.max_future_epochs + 1) __builtin_trap();
    if (table.next_deadline().has_value() != !parked.empty()) __builtin_trap();
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // quiet about the invalid UTF-8 of refused requests
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Harness h;
  size_t at = 0;
  while (at + 2 <= size) {
    const uint8_t op = data[at];
    const size_t len = std::min<size_t>(data[at + 1], size - at - 2);
    const uint8_t* bytes = data + at + 2;
    at += 2 + len;
    const unsigned p = op >> 2;
    std::vector<RendezvousTable::Reply> out;
    switch (op & 3) {
      case 0:
        h.request(bytes, len);
        break;
      case 1:
        h.table.advance(h.table.epoch() + p % 4, out);
        for (auto it = h.model.begin(); it != h.model.end() && it->first < h.table.epoch();) it = h.model.erase(it);
        break;
      case 2:
        h.now += std::chrono::milliseconds(50 * p);
        h.table.expire(h.now, out);
        break;
      case 3:
        if (!h.parked.empty()) {
          auto it = std::next(h.parked.begin(), static_cast<long>(p % h.parked.size()));
          h.table.cancel(it->first);
          h.parked.erase(it);
        } else {
          h.table.cancel(p);  // a waiter that is not there: nothing happens
        }
        break;
    }
    h.deliver(out);
    h.check();
  }
  return 0;
}
