// Test helpers for the ranks suite: terse member and view construction, and seeded random views.
#pragma once

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "membership/view.hpp"

namespace shoal::testing {

using membership::View;
using membership::ViewMember;

// A member whose address is "<host>:<port>".
inline ViewMember member(std::string name, std::string host, uint32_t slots, uint64_t join_epoch,
                         uint16_t port = 7946) {
  ViewMember m;
  m.name = std::move(name);
  m.host = std::move(host);
  m.addr = m.host + ":" + std::to_string(port);
  m.slots = slots;
  m.join_epoch = join_epoch;
  return m;
}

// A view that must be valid; the test fails loudly otherwise.
inline View view(uint64_t epoch, std::vector<ViewMember> members) {
  auto v = View::make(epoch, std::move(members));
  REQUIRE_MESSAGE(v.ok(), (v.ok() ? std::string() : v.error().message));
  return *v;
}

struct RandomViewShape {
  uint32_t max_hosts = 12;
  uint32_t max_members_per_host = 1;
  bool same_count_on_every_host = false;
  uint32_t max_slots = 8;
  bool witnesses = false;  // some members with slots == 0
  uint64_t epoch = 20;
};

// Members m<i> on hosts node<j>, with random slots and join epochs in [0, epoch].
inline std::vector<ViewMember> random_members(std::mt19937_64& rng, const RandomViewShape& shape) {
  const uint32_t hosts = 1 + static_cast<uint32_t>(rng() % shape.max_hosts);
  const uint32_t uniform_count = 1 + static_cast<uint32_t>(rng() % shape.max_members_per_host);
  std::vector<ViewMember> out;
  for (uint32_t h = 0; h < hosts; ++h) {
    const uint32_t count =
        shape.same_count_on_every_host ? uniform_count : 1 + static_cast<uint32_t>(rng() % shape.max_members_per_host);
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t slots = 1 + static_cast<uint32_t>(rng() % shape.max_slots);
      if (shape.witnesses && rng() % 5 == 0) slots = 0;
      out.push_back(member("m" + std::to_string(out.size()), "node" + std::to_string(h), slots,
                           rng() % (shape.epoch + 1), static_cast<uint16_t>(7946 + i)));
    }
  }
  return out;
}

}  // namespace shoal::testing
