// The rendezvous store's state: per-epoch keys, parked waits, and the epoch rule.
#include "comm_wrap/stores/rendezvous_table.hpp"

#include <algorithm>
#include <charconv>

namespace shoal::comm {

using wire::RendezvousRequest;
using wire::RendezvousResponse;

RendezvousResponse RendezvousTable::refuse(const std::string& why) {
  ++counters_.refused;
  RendezvousResponse r;
  r.set_status(RendezvousResponse::REFUSED);
  r.set_current_epoch(current_epoch_);
  r.set_message(why);
  return r;
}

RendezvousResponse RendezvousTable::view_changed(uint64_t epoch) const {
  RendezvousResponse r;
  r.set_status(RendezvousResponse::VIEW_CHANGED);
  r.set_current_epoch(current_epoch_);
  r.set_message("epoch " + std::to_string(epoch) + " was superseded by epoch " + std::to_string(current_epoch_));
  return r;
}

std::optional<RendezvousResponse> RendezvousTable::try_answer(const EpochTable& table,
                                                              const RendezvousRequest& r) const {
  RendezvousResponse out;
  if (r.op() == RendezvousRequest::ADD) {  // a parked long poll: answered once the value moved
    const auto value = counter_value(table, r.keys(0));
    if (!value || *value == r.seen()) return std::nullopt;
    out.set_status(RendezvousResponse::OK);
    out.set_current_epoch(current_epoch_);
    out.set_number(*value);
    return out;
  }
  for (const auto& key : r.keys()) {
    const auto it = table.values.find(key);
    if (it == table.values.end()) return std::nullopt;
    if (r.op() == RendezvousRequest::GET) out.add_values(it->second);
  }
  out.set_status(RendezvousResponse::OK);
  out.set_current_epoch(current_epoch_);
  return out;
}

RendezvousResponse RendezvousTable::number_reply(int64_t n) const {
  RendezvousResponse r;
  r.set_status(RendezvousResponse::OK);
  r.set_current_epoch(current_epoch_);
  r.set_number(n);
  return r;
}

std::optional<int64_t> RendezvousTable::counter_value(const EpochTable& table, const std::string& key) {
  const auto it = table.values.find(key);
  if (it == table.values.end()) return int64_t{0};
  int64_t v = 0;
  const auto* end = it->second.data() + it->second.size();
  const auto [ptr, ec] = std::from_chars(it->second.data(), end, v);
  if (ec != std::errc() || ptr != end || it->second.empty()) return std::nullopt;
  return v;
}

std::optional<RendezvousResponse> RendezvousTable::add(Waiter waiter, EpochTable& table, const RendezvousRequest& r,
                                                       Time now, std::vector<Reply>& completed) {
  if (r.keys_size() != 1) return refuse("an add names exactly one key");
  const std::string& key = r.keys(0);
  const auto current = counter_value(table, key);
  if (!current) return refuse("key '" + key + "' does not hold a decimal counter");
  if (r.wait_for_change() && r.delta() == 0) {  // a long poll
    if (*current != r.seen()) return number_reply(*current);
    if (waiters_.size() >= limits_.max_waiters) return refuse("too many waiting requests");
    const uint32_t timeout_ms = std::min(r.timeout_ms(), limits_.max_timeout_ms);
    waiters_[waiter] = Parked{r.epoch(), r, now + std::chrono::milliseconds(timeout_ms)};
    return std::nullopt;
  }
  int64_t next = 0;
  if (__builtin_add_overflow(*current, r.delta(), &next)) return refuse("the counter '" + key + "' would overflow");
  const bool exists = table.values.contains(key);
  if (!exists && table.values.size() >= limits_.max_keys_per_epoch) {
    return refuse("epoch " + std::to_string(r.epoch()) + " already holds " + std::to_string(table.values.size()) +
                  " keys");
  }
  std::string text = std::to_string(next);
  const size_t old_bytes = exists ? key.size() + table.values[key].size() : 0;
  table.bytes = table.bytes - old_bytes + key.size() + text.size();
  table.values[key] = std::move(text);
  ++counters_.sets;
  complete_waiters(r.epoch(), completed);
  return number_reply(next);
}

std::optional<RendezvousResponse> RendezvousTable::handle(Waiter waiter, const RendezvousRequest& r, Time now,
                                                          std::vector<Reply>& completed) {
  if (r.epoch() < current_epoch_) {
    ++counters_.view_changed;
    return view_changed(r.epoch());
  }
  if (r.epoch() > current_epoch_ + limits_.max_future_epochs) {
    return refuse("epoch " + std::to_string(r.epoch()) + " is too far ahead of the committed epoch " +
                  std::to_string(current_epoch_));
  }
  if (r.keys().empty()) return refuse("a request without keys");
  auto& table = epochs_[r.epoch()];
  switch (r.op()) {
    case RendezvousRequest::SET: {
      if (r.keys_size() != 1) return refuse("a set names exactly one key");
      if (r.value().size() > limits_.max_value_bytes) {
        return refuse("value of " + std::to_string(r.value().size()) + " bytes is above the limit of " +
                      std::to_string(limits_.max_value_bytes));
      }
      const std::string& key = r.keys(0);
      auto it = table.values.find(key);
      const size_t old_bytes = it == table.values.end() ? 0 : key.size() + it->second.size();
      const size_t new_bytes = key.size() + r.value().size();
      if (it == table.values.end() && table.values.size() >= limits_.max_keys_per_epoch) {
        return refuse("epoch " + std::to_string(r.epoch()) + " already holds " + std::to_string(table.values.size()) +
                      " keys");
      }
      if (table.bytes - old_bytes + new_bytes > limits_.max_bytes_per_epoch) {
        return refuse("epoch " + std::to_string(r.epoch()) + " would hold more than " +
                      std::to_string(limits_.max_bytes_per_epoch) + " bytes");
      }
      table.bytes = table.bytes - old_bytes + new_bytes;
      table.values[key] = r.value();
      ++counters_.sets;
      complete_waiters(r.epoch(), completed);
      RendezvousResponse ok;
      ok.set_status(RendezvousResponse::OK);
      ok.set_current_epoch(current_epoch_);
      return ok;
    }
    case RendezvousRequest::ADD:
      return add(waiter, table, r, now, completed);
    case RendezvousRequest::CHECK: {
      const bool all = std::all_of(r.keys().begin(), r.keys().end(),
                                   [&](const std::string& k) { return table.values.contains(k); });
      return number_reply(all ? 1 : 0);
    }
    case RendezvousRequest::DELETE: {
      if (r.keys_size() != 1) return refuse("a delete names exactly one key");
      const auto it = table.values.find(r.keys(0));
      if (it == table.values.end()) return number_reply(0);
      table.bytes -= it->first.size() + it->second.size();
      table.values.erase(it);
      complete_waiters(r.epoch(), completed);  // a long poll on a counter sees it go
      return number_reply(1);
    }
    case RendezvousRequest::NUM_KEYS: {
      if (r.keys_size() != 1) return refuse("num_keys names exactly one prefix");
      const std::string& prefix = r.keys(0);
      int64_t n = 0;
      for (auto it = table.values.lower_bound(prefix); it != table.values.end() && it->first.starts_with(prefix); ++it)
        ++n;
      return number_reply(n);
    }
    case RendezvousRequest::GET:
    case RendezvousRequest::WAIT: {
      ++counters_.gets;
      if (auto answer = try_answer(table, r)) return answer;
      if (waiters_.size() >= limits_.max_waiters) return refuse("too many waiting requests");
      const uint32_t timeout_ms = std::min(r.timeout_ms(), limits_.max_timeout_ms);
      waiters_[waiter] = Parked{r.epoch(), r, now + std::chrono::milliseconds(timeout_ms)};
      return std::nullopt;
    }
    default:
      return refuse("unknown operation " + std::to_string(static_cast<int>(r.op())));
  }
}

void RendezvousTable::complete_waiters(uint64_t epoch, std::vector<Reply>& out) {
  const auto table = epochs_.find(epoch);
  if (table == epochs_.end()) return;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->second.epoch == epoch) {
      if (auto answer = try_answer(table->second, it->second.request)) {
        out.push_back(Reply{it->first, std::move(*answer)});
        it = waiters_.erase(it);
        continue;
      }
    }
    ++it;
  }
}

void RendezvousTable::advance(uint64_t epoch, std::vector<Reply>& out) {
  if (epoch <= current_epoch_) return;
  current_epoch_ = epoch;
  epochs_.erase(epochs_.begin(), epochs_.lower_bound(epoch));
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->second.epoch < epoch) {
      ++counters_.view_changed;
      out.push_back(Reply{it->first, view_changed(it->second.epoch)});
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

void RendezvousTable::expire(Time now, std::vector<Reply>& out) {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    const auto table = epochs_.find(it->second.epoch);
    if (it->second.request.op() == RendezvousRequest::ADD) {  // a long poll: the value has not moved
      const auto value = table == epochs_.end() ? std::optional<int64_t>(0)
                                                : counter_value(table->second, it->second.request.keys(0));
      out.push_back(Reply{it->first, number_reply(value.value_or(it->second.request.seen()))});
      it = waiters_.erase(it);
      continue;
    }
    RendezvousResponse r;
    r.set_status(RendezvousResponse::TIMEOUT);
    r.set_current_epoch(current_epoch_);
    for (const auto& key : it->second.request.keys()) {
      if (table == epochs_.end() || !table->second.values.contains(key)) r.add_missing(key);
    }
    r.set_message("waited " + std::to_string(it->second.request.timeout_ms()) + " ms in epoch " +
                  std::to_string(it->second.epoch) + " for " + std::to_string(r.missing_size()) + " missing key(s)");
    ++counters_.timeouts;
    out.push_back(Reply{it->first, std::move(r)});
    it = waiters_.erase(it);
  }
}

void RendezvousTable::cancel(Waiter waiter) { waiters_.erase(waiter); }

std::optional<RendezvousTable::Time> RendezvousTable::next_deadline() const {
  std::optional<Time> next;
  for (const auto& [id, parked] : waiters_) {
    if (!next || parked.deadline < *next) next = parked.deadline;
  }
  return next;
}

RendezvousTable::Limits RendezvousTable::limits_for_world(const Limits& base, uint64_t world_size) {
  Limits out = base;
  const auto world = static_cast<size_t>(std::min<uint64_t>(world_size, uint64_t{1} << 24));
  out.max_keys_per_epoch = std::max(base.max_keys_per_epoch, world * kKeysPerRank + 1024);
  out.max_waiters = std::max(base.max_waiters, world * kWaitersPerRank + 256);
  out.max_bytes_per_epoch =
      std::max(base.max_bytes_per_epoch, std::min(world * kBytesPerRank + (size_t{1} << 20), kMaxBytesPerEpoch));
  return out;
}

}  // namespace shoal::comm
