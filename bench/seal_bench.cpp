// shoal-bench-seal: the cost of the cluster key, against baselines measured in the same run: sealing
// and opening packets against a memcpy of the same packets, and sealed checkpoint streams against the
// physical bound of raw loopback TCP and the cipher on one core.
//   shoal-bench-seal [--packets N] [--runs R] [--stream-bytes SIZE] [--stream-runs R] [--no-stream]
// One JSON line per operation and packet size (200 bytes: a typical gossip packet; 1400: the largest):
//   op            "seal" (PacketSealer::seal into a new buffer) or "open" (open_sealed of packets sealed
//                 beforehand, a fresh ReplayGuard per run, so every packet is fresh and recorded);
//   pps, mb_per_s packets and plaintext megabytes (10^6) per second on one core;
//   memcpy_pps, memcpy_mb_per_s  the same N packets copied one by one with memcpy into cache-resident
//                 buffers: the least any per-packet transformation costs;
//   vs_memcpy     time per packet of op divided by time per packet of memcpy.
// Every figure is the median of R runs of N packets each. memcpy_seconds in baseline_measure.hpp is not
// used: it times a single copy per sample, below the clock's resolution for a 200-byte packet.
//
// Then streams (default 1 GiB, medians of 3 runs), one JSON line per connection cipher:
//   {"bench":"seal_cipher"}  seal_gbps, open_gbps: one core sealing 4 MiB frames from one buffer into
//                 another, and opening them in place (decimal GB/s of plaintext);
// and one line for the checkpoint stream:
//   {"bench":"seal_stream"}  tcp_gbps: one raw loopback TCP stream between two memory-resident buffers
//                 (bench::tcp_loopback_seconds); aead_gbps: the slower of seal and open of the cipher the
//                 handshake picks here; bound_gbps = 1 / (1/tcp_gbps + 1/aead_gbps), what one core that
//                 both moves and seals every byte can reach; open_replicate_gbps, open_restore_gbps: a
//                 version pushed to, and fetched back from, a real agent of an open cluster;
//                 keyed_replicate_gbps, keyed_restore_gbps: the same with a cluster key (every byte
//                 sealed); keyed_*_vs_bound: keyed throughput over bound_gbps (the target is >= 0.8);
//                 *_cpu_s: CPU seconds of the whole process (both ends) per transfer, which a machine busy
//                 with other work does not inflate as it does wall time.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.hpp"
#include "baseline_measure.hpp"
#include "stream_seal_measure.hpp"
#include "wire/sealed_packet.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace shoal;

constexpr int64_t kNowMs = 1'700'000'000'000;
// As an agent seals and opens: for one address, opened by a host that knows itself by two.
constexpr std::string_view kDestination = "10.0.0.2:7946";
constexpr std::array<std::string_view, 2> kOwn = {"10.0.0.2:7946", "10.0.0.2:7946"};
constexpr size_t kCopySlots = 64;  // memcpy destinations, cycled so they stay in cache as the crypto's do

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Keeps the compiler from dropping work whose result is never read.
void keep(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

struct Figures {
  double memcpy_s, seal_s, open_s;  // per run of N packets, medians
};

Figures measure(wire::PacketSealer& sealer, size_t bytes, size_t packets, int runs) {
  std::vector<std::byte> plain(bytes);
  for (size_t i = 0; i < bytes; ++i) plain[i] = std::byte(i * 31);
  std::vector<std::byte> slots(kCopySlots * bytes);
  std::vector<double> copies, seals, opens;
  for (int r = 0; r < runs + 1; ++r) {  // the first round warms caches and the allocator, not counted
    const auto t0 = Clock::now();
    for (size_t i = 0; i < packets; ++i) {
      std::byte* dst = slots.data() + (i % kCopySlots) * bytes;
      std::memcpy(dst, plain.data(), bytes);
      keep(dst);
    }
    const double copy_s = since(t0);

    const auto t1 = Clock::now();
    for (size_t i = 0; i < packets; ++i) {
      const auto sealed = sealer.seal(plain, kDestination, kNowMs);
      keep(sealed.data());
    }
    const double seal_s = since(t1);

    std::vector<std::vector<std::byte>> batch;
    batch.reserve(packets);
    for (size_t i = 0; i < packets; ++i) batch.push_back(sealer.seal(plain, kDestination, kNowMs));
    wire::ReplayGuard guard;
    size_t opened = 0;
    const auto t2 = Clock::now();
    for (const auto& sealed : batch) {
      auto out = wire::open_sealed(sealer.keys(), sealed, kOwn, kNowMs, guard);
      opened += out.ok() ? 1 : 0;
      keep(&out);
    }
    const double open_s = since(t2);
    if (opened != packets) {
      std::fprintf(stderr, "shoal-bench-seal: only %zu of %zu packets opened\n", opened, packets);
      std::exit(1);
    }
    if (r == 0) continue;
    copies.push_back(copy_s);
    seals.push_back(seal_s);
    opens.push_back(open_s);
  }
  return {bench::median(copies), bench::median(seals), bench::median(opens)};
}

void print(const char* op, size_t bytes, size_t packets, int runs, double op_s, double memcpy_s) {
  const double n = double(packets);
  std::printf(
      "{\"bench\":\"seal\",\"op\":\"%s\",\"bytes\":%zu,\"packets\":%zu,\"runs\":%d,\"pps\":%.0f,\"mb_per_s\":%.1f,"
      "\"ns_per_packet\":%.1f,\"memcpy_pps\":%.0f,\"memcpy_mb_per_s\":%.1f,\"vs_memcpy\":%.1f}\n",
      op, bytes, packets, runs, n / op_s, n * double(bytes) / op_s / 1e6, op_s / n * 1e9, n / memcpy_s,
      n * double(bytes) / memcpy_s / 1e6, op_s / memcpy_s);
}

// A key file of a fresh key, mode 0600 from its creation (mkstemp), for the keyed agent; removed by the
// caller.
std::string write_key_file() {
  char path[] = "/tmp/shoal-bench-seal-key.XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) throw std::runtime_error("cannot create a key file in /tmp");
  const std::string text = wire::generate_key_text() + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write the key file");
  return path;
}

std::string fixed(double v, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

void measure_streams(size_t bytes, int runs) {
  const wire::StreamCipher chosen = (wire::local_cipher_offer() & uint8_t(wire::StreamCipher::aes256gcm)) != 0
                                        ? wire::StreamCipher::aes256gcm
                                        : wire::StreamCipher::xchacha20poly1305;
  double aead_gbps = 0;
  for (const auto cipher : {wire::StreamCipher::aes256gcm, wire::StreamCipher::xchacha20poly1305}) {
    if (cipher == wire::StreamCipher::aes256gcm && chosen != cipher) continue;  // no AES-NI here
    const auto s = bench::stream_cipher_seconds(cipher, bytes, runs);
    const double seal = bench::gbps(bytes, bench::median(s.seal)), open = bench::gbps(bytes, bench::median(s.open));
    if (cipher == chosen) aead_gbps = std::min(seal, open);
    std::printf(
        "{\"bench\":\"seal_cipher\",\"cipher\":\"%s\",\"bytes\":%zu,\"runs\":%d,\"seal_gbps\":%s,"
        "\"open_gbps\":%s}\n",
        std::string(wire::cipher_name(cipher)).c_str(), bytes, runs, fixed(seal, 3).c_str(), fixed(open, 3).c_str());
    std::fflush(stdout);
  }
  const double tcp_gbps = bench::gbps(bytes, bench::median(bench::tcp_loopback_seconds(bytes, runs, 4u << 20, true)));
  const double bound_gbps = 1.0 / (1.0 / tcp_gbps + 1.0 / aead_gbps);
  const auto open = bench::agent_transfer_seconds(bytes, runs, "");
  const std::string key_file = write_key_file();
  bench::TransferSeconds keyed;
  try {
    keyed = bench::agent_transfer_seconds(bytes, runs, key_file);
  } catch (...) {
    ::unlink(key_file.c_str());
    throw;
  }
  ::unlink(key_file.c_str());
  const auto figure = [&](const std::vector<double>& seconds) { return bench::gbps(bytes, bench::median(seconds)); };
  const auto cpu = [](const std::vector<double>& seconds) { return bench::median(seconds); };
  std::string line = "{\"bench\":\"seal_stream\",\"cipher\":\"" + keyed.cipher +
                     "\",\"bytes\":" + std::to_string(bytes) + ",\"runs\":" + std::to_string(runs);
  const auto put = [&](const char* key, double v) { line += std::string(",\"") + key + "\":" + fixed(v, 3); };
  put("tcp_gbps", tcp_gbps);
  put("aead_gbps", aead_gbps);
  put("bound_gbps", bound_gbps);
  put("open_replicate_gbps", figure(open.replicate));
  put("open_restore_gbps", figure(open.restore));
  put("keyed_replicate_gbps", figure(keyed.replicate));
  put("keyed_restore_gbps", figure(keyed.restore));
  put("keyed_replicate_vs_bound", figure(keyed.replicate) / bound_gbps);
  put("keyed_restore_vs_bound", figure(keyed.restore) / bound_gbps);
  put("open_replicate_cpu_s", cpu(open.replicate_cpu));
  put("open_restore_cpu_s", cpu(open.restore_cpu));
  put("keyed_replicate_cpu_s", cpu(keyed.replicate_cpu));
  put("keyed_restore_cpu_s", cpu(keyed.restore_cpu));
  std::printf("%s}\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  size_t packets = 50'000;
  int runs = 7;
  std::vector<size_t> stream_bytes = {size_t(1) << 30};
  int stream_runs = 3;
  bool streams = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--packets" && i + 1 < argc) {
      packets = std::strtoull(argv[++i], nullptr, 10);
      if (packets < 1) {
        std::fprintf(stderr, "shoal-bench-seal: --packets takes a positive number\n");
        return 2;
      }
    } else if ((a == "--runs" || a == "--stream-runs") && i + 1 < argc) {
      const int n = std::atoi(argv[++i]);
      if (n < 1) {
        std::fprintf(stderr, "shoal-bench-seal: %s takes a positive number\n", a.c_str());
        return 2;
      }
      (a == "--runs" ? runs : stream_runs) = n;
    } else if (a == "--stream-bytes" && i + 1 < argc) {
      if (!bench::parse_sizes(argv[++i], &stream_bytes) || stream_bytes.size() != 1 || stream_bytes[0] == 0) {
        std::fprintf(stderr, "shoal-bench-seal: --stream-bytes takes one size like 268435456, 256M or 1G\n");
        return 2;
      }
    } else if (a == "--no-stream") {
      streams = false;
    } else {
      std::fprintf(stderr,
                   "usage: shoal-bench-seal [--packets N] [--runs R] [--stream-bytes SIZE] [--stream-runs R] "
                   "[--no-stream]\n"
                   "one JSON line per operation (seal, open) and packet size (200, 1400 bytes), against memcpy of\n"
                   "the same packets (medians of R runs of N packets; default N 50000, R 7); then the stream\n"
                   "cipher on one core, and checkpoints replicated and restored keyed and open against the bound\n"
                   "1/(1/TCP + 1/AEAD) (default 1G, medians of 3 runs)\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (auto ok = wire::init_sodium(); !ok) {
    std::fprintf(stderr, "shoal-bench-seal: %s\n", ok.error().message.c_str());
    return 1;
  }
  auto keys = wire::parse_key_text(wire::generate_key_text(), "generated");
  if (!keys) {
    std::fprintf(stderr, "shoal-bench-seal: %s\n", keys.error().message.c_str());
    return 1;
  }
  wire::PacketSealer sealer(*keys);
  for (const size_t bytes : {size_t(200), size_t(1400)}) {
    const Figures f = measure(sealer, bytes, packets, runs);
    print("seal", bytes, packets, runs, f.seal_s, f.memcpy_s);
    print("open", bytes, packets, runs, f.open_s, f.memcpy_s);
    std::fflush(stdout);
  }
  if (!streams) return 0;
  try {
    const char* env = std::getenv("SHOAL_LOG");
    if (auto spec = log::parse_spec(env ? env : "warn")) log::setup(*spec);
    measure_streams(stream_bytes[0], stream_runs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal-bench-seal: %s\n", e.what());
    return 1;
  }
  return 0;
}
