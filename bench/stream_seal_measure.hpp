// What sealing costs a checkpoint stream, for shoal-bench-seal: the connection cipher alone on one core,
// and a version replicated to and restored from a real agent on loopback, keyed or open.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "wire/stream_handshake.hpp"

namespace shoal::bench {

// Seconds for one core to seal `bytes` (in 4 MiB frames, as a checkpoint stream is cut) from one
// pre-faulted buffer into another, and to open them again in place; one sample of each per run.
struct CipherSeconds {
  std::vector<double> seal;
  std::vector<double> open;
};
CipherSeconds stream_cipher_seconds(wire::StreamCipher cipher, size_t bytes, int runs);

// Seconds for push_version of one version of `bytes` to an agent on loopback (which verifies and keeps
// it), and for fetch_version of it back into a ready buffer; one sample of each per run, after two
// warm-up rounds. `key_file` empty: an open cluster; otherwise both ends hold that key and every byte
// travels sealed.
struct TransferSeconds {
  std::vector<double> replicate;
  std::vector<double> restore;
  // CPU seconds the whole process (sender and receiving agent both) spent on each: what the transfer
  // costs whatever else the machine runs, where wall time also counts waiting for a shared core.
  std::vector<double> replicate_cpu;
  std::vector<double> restore_cpu;
  std::string cipher;  // the connection's cipher as the handshake chose it ("none" when open)
};
TransferSeconds agent_transfer_seconds(size_t bytes, int runs, const std::string& key_file);

}  // namespace shoal::bench
