// Session::agree_restore and the ranged reads behind a restore onto another world, with real parts: two
// embedded sessions (two hosts) in this process on loopback, a real Gloo communicator, real replicas in
// /dev/shm. Ranges come from local memory; from the peer's replica once this host's copy is gone or one
// of its chunks was changed (the change never reaches the caller's memory); a version whose every copy
// fails verification is VersionRefused; an unknown buffer or a range past its buffer is refused before
// any byte is written.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "ckpt_shm/held_scan.hpp"
#include "wire/cluster_key.hpp"
#include "shoal/errors.hpp"
#include "shoal/session.hpp"

using namespace std::chrono_literals;

namespace {

constexpr uint64_t K = 64 * 1024;
const std::string kJob = "ranged-" + std::to_string(::getpid());

// A key file of mode 0600 (what the agent accepts), removed at the end of the test.
struct KeyFile {
  std::string path = "/tmp/shoal-ranged-" + std::to_string(::getpid()) + ".key";
  KeyFile() {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    const std::string text = shoal::wire::generate_key_text();
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  ~KeyFile() { ::unlink(path.c_str()); }
};

// key_file empty: an open cluster (loopback only).
shoal::SessionOptions host(const std::string& name, const std::string& seed, const std::string& key_file) {
  shoal::SessionOptions o;
  o.name = name;
  o.bind = "127.0.0.1:0";
  o.cluster = kJob;
  o.log_spec = "error";
  o.key_file = key_file;
  o.insecure = key_file.empty();
  o.control_path = "none";
  o.min_hosts = 2;
  o.job = kJob;
  o.host = kJob + "-" + name;
  o.ckpt_store = kJob + "-" + name;
  if (!seed.empty()) o.seeds = {seed};
  return o;
}

std::vector<std::byte> pattern(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = std::byte(static_cast<uint8_t>(rng()));
  return v;
}

// The segment of `store` holding saved rank `rank`'s version of `step` (its own slot, or a replica).
std::string segment_of(const std::string& store, uint32_t rank, uint64_t step, bool replica) {
  for (const auto& h : shoal::ckpt::scan_held(store)) {
    if (h.version && h.version->id.rank == rank && h.version->id.step == step && h.replica == replica) {
      return h.segment;
    }
  }
  return {};
}

// Flips one byte of buffer `buffer`'s bytes at `at` in a held segment (a bad memory cell, a stray write).
void corrupt(const std::string& segment, const std::string& buffer, uint64_t at) {
  const int fd = ::shm_open(segment.c_str(), O_RDWR, 0);
  REQUIRE(fd >= 0);
  const off_t size = ::lseek(fd, 0, SEEK_END);
  void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  REQUIRE(p != MAP_FAILED);
  auto info = shoal::ckpt::decode_version({static_cast<const std::byte*>(p), static_cast<size_t>(size)});
  REQUIRE(info);
  bool done = false;
  for (const auto& b : info->buffers) {
    if (b.name == buffer) {
      static_cast<std::byte*>(p)[b.offset + at] ^= std::byte{0x5a};
      done = true;
    }
  }
  ::munmap(p, static_cast<size_t>(size));
  REQUIRE(done);
}

struct TwoHosts {
  std::unique_ptr<shoal::Session> a, b;
  std::shared_ptr<shoal::Communicator> ca, cb;
  // Each rank's buffers: "big" spans four chunks (the last one short), "small" is tiny.
  std::vector<std::vector<std::byte>> big, small;

  explicit TwoHosts(const std::string& key_file = {}) {
    a = shoal::Session::start(host("a", "", key_file));
    b = shoal::Session::start(host("b", a->address(), key_file));
    auto fa = std::async(std::launch::async, [&] { return a->communicator(); });
    cb = b->communicator();
    ca = fa.get();
    REQUIRE(ca->world_size() == 2);
    for (int r = 0; r < 2; ++r) {
      big.push_back(pattern(3 * K + 100, 10 + r));
      small.push_back(pattern(10, 20 + r));
    }
    const auto save = [&](shoal::Session& s, shoal::Communicator& c) {
      const int r = c.rank();
      auto save = s.begin_save(c, 7, {{"big", big[r].size()}, {"small", small[r].size()}});
      save->write("big", big[r]);
      save->write("small", small[r]);
      save->commit();
      REQUIRE(s.wait_checkpoint_safe(7, 20s));
    };
    auto sa = std::async(std::launch::async, [&] { save(*a, *ca); });
    save(*b, *cb);
    sa.get();
  }
  ~TwoHosts() {
    auto la = std::async(std::launch::async, [&] { a->leave(); });
    b->leave();
    la.get();
  }
  // The session and the saved-rank order of host a / b.
  shoal::Session& of(int rank) { return ca->rank() == rank ? *a : *b; }
  std::string store_of(int rank) { return kJob + "-" + (ca->rank() == rank ? "a" : "b"); }

  std::optional<shoal::RestorePoint> agree() {
    auto fa = std::async(std::launch::async, [&] { return a->agree_restore(*ca); });
    auto pb = b->agree_restore(*cb);
    auto pa = fa.get();
    REQUIRE(pa.has_value() == pb.has_value());
    if (pa) CHECK(pa->step == pb->step);
    return pa;
  }
};

}  // namespace

TEST_CASE("ranged reads come from local memory, then from the peer's replica when the local copy is gone or bad") {
  // A keyed cluster: the ranged fetch's frames and bytes are sealed like every other transfer's.
  KeyFile key;
  TwoHosts h(key.path);
  const auto point = h.agree();
  REQUIRE(point);
  CHECK(point->step == 7);
  CHECK(point->saved_world == 2);

  // Rank 0's own host reads two pieces of it (across a chunk edge, and the short last chunk) from memory.
  auto& reader = h.of(0);
  const auto& want = h.big[0];
  std::vector<std::byte> x(K + 10), y(50), s(4);
  const std::vector<shoal::ByteRange> ranges = {
      {"big", K - 5, x.size(), x.data()}, {"big", 3 * K + 50, y.size(), y.data()}, {"small", 3, 4, s.data()}};
  CHECK(reader.read_ranges(7, 0, ranges) == "local");
  CHECK(std::memcmp(x.data(), want.data() + K - 5, x.size()) == 0);
  CHECK(std::memcmp(y.data(), want.data() + 3 * K + 50, y.size()) == 0);
  CHECK(std::memcmp(s.data(), h.small[0].data() + 3, 4) == 0);

  const auto table = reader.version_buffers(7, 0);
  REQUIRE(table.size() == 2);
  CHECK(table[0].name == "big");
  CHECK(table[0].size == want.size());
  CHECK(table[1].name == "small");

  // A changed byte in chunk 1 of this host's copy: refused, and the peer's replica gives the bytes.
  const std::string own = segment_of(h.store_of(0), 0, 7, false);
  REQUIRE_FALSE(own.empty());
  corrupt(own, "big", K + 3);
  std::fill(x.begin(), x.end(), std::byte{0});
  const std::string peer = h.ca->rank() == 0 ? "b" : "a";
  CHECK(reader.read_ranges(7, 0, {{"big", K - 5, x.size(), x.data()}}) == peer);
  CHECK(std::memcmp(x.data(), want.data() + K - 5, x.size()) == 0);

  // This host's copy gone: the table and the ranges from the peer.
  REQUIRE(::shm_unlink(own.c_str()) == 0);
  CHECK(reader.version_buffers(7, 0).size() == 2);
  std::vector<std::byte> whole(want.size());
  CHECK(reader.read_ranges(7, 0, {{"big", 0, whole.size(), whole.data()}}) == peer);
  CHECK(whole == want);
}

TEST_CASE("a version whose every copy fails verification is refused, and bad ranges before any byte is read") {
  TwoHosts h;
  REQUIRE(h.agree());
  auto& reader = h.of(0);
  std::vector<std::byte> x(100, std::byte{0x11});
  const std::vector<std::byte> untouched = x;

  // Unknown buffer, a range past its buffer: shoal::Error (not a refusal of the copy), nothing written.
  try {
    reader.read_ranges(7, 0, {{"big", 0, 10, x.data()}, {"nope", 0, 1, x.data()}});
    FAIL("an unknown buffer was read");
  } catch (const shoal::VersionRefused&) {
    FAIL("an unknown buffer is the caller's error, not a refused copy");
  } catch (const shoal::Error& e) {
    CHECK(std::string(e.what()).find("'nope'") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(reader.read_ranges(7, 0, {{"small", 5, 6, x.data()}}), doctest::Contains("ends past"),
                       shoal::Error);
  CHECK(x == untouched);

  // Both copies of rank 0's version changed in chunk 2: VersionRefused, and the caller's memory holds
  // only bytes that verified (the range in chunk 0 may be filled; the one in chunk 2 never is).
  corrupt(segment_of(h.store_of(0), 0, 7, false), "big", 2 * K + 1);
  corrupt(segment_of(h.store_of(1), 0, 7, true), "big", 2 * K + 1);
  std::vector<std::byte> z(10, std::byte{0x22});
  CHECK_THROWS_AS(reader.read_ranges(7, 0, {{"big", 2 * K, z.size(), z.data()}}), shoal::VersionRefused);
  CHECK(z == std::vector<std::byte>(10, std::byte{0x22}));
  // Rank 1's version is intact and still reads.
  CHECK_NOTHROW(reader.read_ranges(7, 1, {{"big", 0, x.size(), x.data()}}));
  CHECK(std::memcmp(x.data(), h.big[1].data(), x.size()) == 0);
}
