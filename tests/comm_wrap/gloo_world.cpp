// The threads-in-one-process Gloo world of the comm tests.
#include "gloo_world.hpp"

#include <doctest/doctest.h>

namespace shoal::testing {

std::vector<std::exception_ptr> on_every_rank(int n, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

std::vector<std::unique_ptr<comm::Communicator>> make_gloo_world(int n, comm::LocalRendezvousStore& store,
                                                                 comm::GlooOptions base) {
  std::vector<std::unique_ptr<comm::Communicator>> world(static_cast<size_t>(n));
  base.world_size = n;
  base.epoch = store.epoch();
  const auto errors = on_every_rank(n, [&](int r) {
    auto options = base;
    options.rank = r;
    world[size_t(r)] = comm::make_gloo_communicator(options, store);
  });
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return world;
}

}  // namespace shoal::testing
