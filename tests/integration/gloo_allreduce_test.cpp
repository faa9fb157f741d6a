// Proves the Gloo dependency is usable: two ranks on two threads connect over loopback TCP and
// allreduce. (The in-process HashStore stands in for shoal's own store, which arrives with comm_wrap.)
#include <doctest/doctest.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <thread>
#include <vector>

namespace {

std::vector<float> allreduce_on_rank(gloo::rendezvous::Store& store, int rank, int size, size_t n) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(std::chrono::seconds(20));
  gloo::rendezvous::PrefixStore prefixed("epoch-1", store);
  context->connectFullMesh(prefixed, device);

  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = float(rank + 1) * float(i);
  gloo::AllreduceOptions opts(context);
  opts.setOutput(data.data(), data.size());
  opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  gloo::allreduce(opts);
  return data;
}

}  // namespace

TEST_CASE("two Gloo ranks allreduce a sum over loopback TCP") {
  gloo::rendezvous::HashStore store;
  constexpr size_t n = 1 << 16;
  std::vector<float> out0, out1;
  std::thread t0([&] { out0 = allreduce_on_rank(store, 0, 2, n); });
  std::thread t1([&] { out1 = allreduce_on_rank(store, 1, 2, n); });
  t0.join();
  t1.join();
  REQUIRE(out0.size() == n);
  for (size_t i = 0; i < n; i += 997) {
    CHECK(out0[i] == doctest::Approx(3.0 * double(i)));
    CHECK(out1[i] == out0[i]);
  }
}
