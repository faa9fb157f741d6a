// Test helper: a Gloo world of n ranks on n threads of this process, bootstrapped through one
// LocalRendezvousStore, and a way to run one function per rank on threads and collect what each threw.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "comm_wrap/communicator.hpp"
#include "comm_wrap/gloo/communicator.hpp"
#include "comm_wrap/stores/local_rendezvous_store.hpp"

namespace shoal::testing {

// Runs fn(rank) for every rank on its own thread; returns what each threw (null when nothing).
std::vector<std::exception_ptr> on_every_rank(int n, const std::function<void(int)>& fn);

// Connects n ranks of `base.epoch` through `store`; rank and world size of `base` are overwritten.
std::vector<std::unique_ptr<comm::Communicator>> make_gloo_world(int n, comm::LocalRendezvousStore& store,
                                                                 comm::GlooOptions base = {});

inline double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace shoal::testing
