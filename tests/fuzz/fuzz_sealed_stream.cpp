// Fuzz target: the reader of a keyed connection's sealed frames and data (BlockingConn::read_frame and
// read_data, over a socketpair), as a checkpoint stream uses it: a request frame, bulk data, a response
// frame. The first byte says what the rest is:
//   even  raw bytes arriving on a keyed connection: every read fails or returns, never crashes or
//         hangs (the stream ends), and nothing random ever opens;
//   odd   a stream sealed right from the input (its data cut into records at input-chosen sizes), then
//         changed as byte 1 says: kept, one bit flipped, cut short, or two records swapped. Read with
//         input-chosen room sizes: the kept stream gives back exactly its bytes; a changed one fails
//         before it completes, and whatever it gave back before failing is the sender's own bytes.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "net/blocking_conn.hpp"
#include "wire/frame_cipher.hpp"
#include "wire/stream_handshake.hpp"

namespace {

using namespace shoal;
using Clock = std::chrono::steady_clock;

wire::StreamKeys keys(bool client, wire::StreamCipher cipher) {
  wire::StreamKeys k;
  k.cipher = cipher;
  for (size_t i = 0; i < k.send.size(); ++i) {
    const auto a = static_cast<unsigned char>(i * 7 + 1), b = static_cast<unsigned char>(i * 13 + 2);
    k.send[i] = client ? a : b;
    k.receive[i] = client ? b : a;
  }
  return k;
}

struct Pair {
  int ends[2] = {-1, -1};
  Pair() {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) __builtin_trap();
  }
  ~Pair() {
    if (ends[0] >= 0) ::close(ends[0]);
  }
};

// Writes everything, then ends the stream, so that the reader never waits for more.
void deliver(int fd, std::span<const std::byte> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) __builtin_trap();  // the socket buffer holds what the caller allows (64 KiB)
    done += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
}

// Reads request, data, response as transfer.cpp does. Returns whether all of it arrived and opened, and
// checks every byte handed out against `expected` (the sender's data).
bool read_all(net::BlockingConn& conn, std::span<const std::byte> expected, std::span<const uint8_t> rooms) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  if (!conn.read_frame(4096, deadline)) return false;
  std::vector<std::byte> into(expected.size() + 64);
  size_t got = 0, turn = 0;
  while (got < expected.size()) {
    const size_t want = rooms.empty() ? expected.size() - got : size_t{rooms[turn++ % rooms.size()]} * 16 + 1;
    const size_t room = std::min(want, expected.size() - got);
    auto n = conn.read_data(std::span<std::byte>(into).subspan(got, room), deadline);
    if (!n) return false;
    if (*n == 0 || *n > room) __builtin_trap();
    if (std::memcmp(into.data() + got, expected.data() + got, *n) != 0) __builtin_trap();  // only what was sent
    got += *n;
  }
  auto response = conn.read_frame(4096, deadline);
  return response.ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4 || size > 16384) return 0;
  const wire::StreamCipher cipher =
      (data[0] & 2) != 0 && (wire::local_cipher_offer() & static_cast<uint8_t>(wire::StreamCipher::aes256gcm)) != 0
          ? wire::StreamCipher::aes256gcm
          : wire::StreamCipher::xchacha20poly1305;
  Pair pair;
  net::BlockingConn reader(pair.ends[1]);
  reader.set_keys(keys(false, cipher));

  if ((data[0] & 1) == 0) {
    deliver(pair.ends[0], std::as_bytes(std::span(data + 1, size - 1)));
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    if (reader.read_frame(4096, deadline)) __builtin_trap();  // no tag can verify without the key
    std::vector<std::byte> room(size_t{data[1]} + 1);
    if (reader.read_data(room, deadline)) __builtin_trap();
    return 0;
  }

  // A stream sealed right: request, data in records, response.
  const uint8_t change = data[1] % 4;
  const size_t where = data[2];
  const auto payload = std::as_bytes(std::span(data + 4, size - 4));
  const std::span<const uint8_t> rooms(data + 4, std::min<size_t>(size - 4, 8));
  wire::SealedFrames sender(keys(true, cipher));
  std::vector<std::byte> stream;
  std::vector<size_t> starts;  // where each frame starts, for the swap
  starts.push_back(stream.size());
  sender.send.append(stream, wire::type_byte(wire::FrameType::request),
                     payload.first(std::min<size_t>(payload.size(), 16)));
  const size_t record = size_t{data[3]} * 8 + 1;
  for (size_t off = 0; off < payload.size(); off += record) {
    starts.push_back(stream.size());
    sender.send.append(stream, wire::type_byte(wire::FrameType::data),
                       payload.subspan(off, std::min(record, payload.size() - off)));
  }
  starts.push_back(stream.size());
  sender.send.append(stream, wire::type_byte(wire::FrameType::response), {});
  starts.push_back(stream.size());
  // What a socket buffer holds before anyone reads (records of one byte cost 22 each).
  if (stream.size() > 64 * 1024) return 0;

  std::vector<std::byte> sent = stream;
  if (change == 1) {
    const size_t bit = (where * 131 + size) % (sent.size() * 8);
    sent[bit / 8] ^= std::byte(1u << (bit % 8));
  } else if (change == 2) {
    sent.resize(where % sent.size());
  } else if (change == 3 && starts.size() >= 4) {
    // Two neighbouring frames change places (the request and the first record, or two records).
    const size_t i = where % (starts.size() - 2);
    std::vector<std::byte> swapped(sent.begin(), sent.begin() + static_cast<std::ptrdiff_t>(starts[i]));
    swapped.insert(swapped.end(), sent.begin() + static_cast<std::ptrdiff_t>(starts[i + 1]),
                   sent.begin() + static_cast<std::ptrdiff_t>(starts[i + 2]));
    swapped.insert(swapped.end(), sent.begin() + static_cast<std::ptrdiff_t>(starts[i]),
                   sent.begin() + static_cast<std::ptrdiff_t>(starts[i + 1]));
    swapped.insert(swapped.end(), sent.begin() + static_cast<std::ptrdiff_t>(starts[i + 2]), sent.end());
    sent = std::move(swapped);
  }
  deliver(pair.ends[0], sent);
  const bool whole = read_all(reader, payload, rooms);
  const bool unchanged = sent == stream;
  if (whole != unchanged) __builtin_trap();
  return 0;
}
