// Baselines that every shoal benchmark compares against, measured in the same run because these
// machines are shared and noisy: a single-threaded memcpy and one TCP stream over 127.0.0.1.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::bench {

// Seconds for one memcpy of `bytes` between two pre-faulted buffers; one sample per run.
std::vector<double> memcpy_seconds(size_t bytes, int runs);

// Seconds to move `bytes` through one loopback TCP stream (writes of write_bytes each), from the
// first write until the receiver has read the last byte; one sample per run. With whole_buffers the
// bytes go from a pre-faulted buffer of `bytes` to another (memory to memory, like a checkpoint);
// without, one write_bytes buffer is sent repeatedly into one read buffer (cache-resident).
std::vector<double> tcp_loopback_seconds(size_t bytes, int runs, size_t write_bytes = 4u << 20,
                                         bool whole_buffers = false);

// Seconds to write `bytes` from a pre-faulted buffer to a new file in `dir` (write() in 8 MiB pieces)
// and fsync it, the file removed afterwards; one sample per run. The disk baseline of persistence.
std::vector<double> write_fsync_seconds(size_t bytes, int runs, const std::string& dir);

// "268435456", "256M", "1G", "4G" (K, M, G suffixes), comma separated; false on anything else.
bool parse_sizes(std::string_view list, std::vector<size_t>* out);

double median(std::vector<double> v);
// Decimal gigabytes per second.
inline double gbps(size_t bytes, double seconds) { return seconds > 0 ? double(bytes) / seconds / 1e9 : 0.0; }

}  // namespace shoal::bench
