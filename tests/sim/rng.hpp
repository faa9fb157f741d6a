// SimRng: the simulator's seeded random generator (xoshiro256**, seeded through splitmix64) and the
// few distributions it needs, written out so that a seed replays identically with any standard library.
#pragma once

#include <cstdint>

namespace shoal::sim {

// One step of splitmix64: also used to derive independent seeds from (seed, index) pairs.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A seed for a sub-stream (a member's core, the network, a scenario) that does not overlap the others.
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  uint64_t s = seed ^ (stream * 0xd1b54a32d192ed03ULL);
  splitmix64(s);
  return splitmix64(s);
}

class SimRng {
 public:
  explicit SimRng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& w : s_) w = splitmix64(s);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // True with probability p (p <= 0: never, p >= 1: always, without consuming a draw at either end).
  bool chance(double p) {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return unit() < p;
  }
  // Uniform in [0, bound); bound 0 gives 0. Multiply-shift: bias below 2^-32 for the bounds we use.
  uint64_t below(uint64_t bound) {
    if (bound == 0) return 0;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace shoal::sim
