// The cluster key file: hex and base64 keys, comments, errors that name the line, the permission, owner,
// link and FIFO checks on a real file, and generated keys that parse back.
#include "wire/cluster_key.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <future>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace shoal::wire;

namespace {

constexpr const char* kHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
constexpr const char* kBase64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";  // the same 32 bytes
constexpr const char* kOtherHex = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

std::array<unsigned char, 32> counting_bytes() {
  std::array<unsigned char, 32> b{};
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i);
  return b;
}

std::string error_of(std::string_view text) {
  auto r = parse_key_text(text, "keys.txt");
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

// A real file in the temp directory, removed on scope exit (also when a check fails).
struct TempKeyFile {
  std::string path;
  explicit TempKeyFile(const std::string& text) {
    char name[] = "/tmp/shoal-cluster-key-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    path = name;
    REQUIRE(::write(fd, text.data(), text.size()) == ssize_t(text.size()));
    ::close(fd);
  }
  ~TempKeyFile() { ::unlink(path.c_str()); }
};

}  // namespace

TEST_CASE("a key of 64 hex digits parses to its 32 bytes") {
  auto ring = parse_key_text(kHex, "keys.txt");
  REQUIRE(ring.ok());
  REQUIRE(ring->size() == 1);
  CHECK(ring->sending().bytes == counting_bytes());
}

TEST_CASE("upper-case hex is the same key as lower-case hex") {
  std::string upper = kHex;
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  auto ring = parse_key_text(upper, "keys.txt");
  REQUIRE(ring.ok());
  CHECK(ring->sending().bytes == counting_bytes());
}

TEST_CASE("a base64 key as printed by openssl rand -base64 32 parses to its 32 bytes") {
  auto ring = parse_key_text(std::string(kBase64) + "\n", "keys.txt");
  REQUIRE(ring.ok());
  CHECK(ring->sending().bytes == counting_bytes());
}

TEST_CASE("comments, blank lines, surrounding whitespace and CRLF line ends are ignored") {
  const std::string text =
      std::string("# cluster key of job 7\r\n\r\n   \n\t") + kBase64 + "  \r\n# next key\n " + kOtherHex + "\n\n";
  auto ring = parse_key_text(text, "keys.txt");
  REQUIRE(ring.ok());
  REQUIRE(ring->size() == 2);
  CHECK(ring->sending().bytes == counting_bytes());
  CHECK(ring->keys()[1].bytes[0] == 0xff);
}

TEST_CASE("the key id is pinned: BLAKE2b-256 of the context and the key, first 4 bytes little endian") {
  // Computed independently (Python hashlib.blake2b, digest_size=32). The id is on the wire; if this
  // changes, hosts of two builds refuse each other.
  CHECK(cluster_key_id(counting_bytes()) == 0xacea7745u);
  auto ring = parse_key_text(std::string(kHex) + "\n" + kOtherHex, "keys.txt");
  REQUIRE(ring.ok());
  CHECK(ring->sending().id == 0xacea7745u);
  CHECK(ring->keys()[1].id == 0xaf7d4ae9u);
}

TEST_CASE("a ring finds its keys by id, sends with the first, and finds nothing for a foreign id") {
  auto ring = parse_key_text(std::string(kOtherHex) + "\n" + kHex, "keys.txt");
  REQUIRE(ring.ok());
  CHECK(ring->sending().id == 0xaf7d4ae9u);
  REQUIRE(ring->find(0xacea7745u) != nullptr);
  CHECK(ring->find(0xacea7745u)->bytes == counting_bytes());
  CHECK(ring->find(0x12345678u) == nullptr);
}

TEST_CASE("a key of the wrong length is refused with its line number and its byte count") {
  const std::string short_b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==";  // 31 bytes
  CHECK(error_of("# key\n\n" + short_b64) ==
        "keys.txt: line 3: expected 32 bytes as 64 hex digits or base64, got 31 bytes");
  const std::string short_hex = std::string(kHex).substr(0, 62);
  CHECK(error_of(short_hex).find("line 1: expected 32 bytes as 64 hex digits or base64, got 31 bytes") !=
        std::string::npos);
}

TEST_CASE("a line that is neither hex nor base64 is refused without echoing the line") {
  const std::string secretish = "not-a-key!but-secret-material-goes-here";
  const std::string msg = error_of(std::string(kHex) + "\n" + secretish);
  CHECK(msg.find("keys.txt: line 2:") == 0);
  CHECK(msg.find("neither") != std::string::npos);
  CHECK(msg.find(secretish) == std::string::npos);
  // Base64 without its padding is refused too: keys are written as openssl prints them.
  CHECK(error_of("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").find("line 1:") != std::string::npos);
}

TEST_CASE("text without a key is refused") {
  CHECK(error_of("").find("keys.txt: no key found") == 0);
  CHECK(error_of("# only a comment\n\n  \n").find("no key found") != std::string::npos);
}

TEST_CASE("a fifth key is refused at its line") {
  std::string text;
  for (int i = 1; i <= 5; ++i) {
    std::string hex(64, '0');
    hex[63] = char('0' + i);
    text += hex + "\n";
  }
  const std::string msg = error_of(text);
  CHECK(msg.find("keys.txt: line 5: more than 4 keys") == 0);
  text.resize(text.size() - 65);  // four keys are fine
  auto ring = parse_key_text(text, "keys.txt");
  REQUIRE(ring.ok());
  CHECK(ring->size() == 4);
}

TEST_CASE("the same key twice is refused, also when written once as hex and once as base64") {
  CHECK(error_of(std::string(kHex) + "\n# again\n" + kBase64) == "keys.txt: line 3: the same key as line 1");
}

TEST_CASE("the all-zero key is refused") {
  CHECK(error_of(std::string(64, '0')).find("keys.txt: line 1: the all-zero key is refused") == 0);
}

TEST_CASE("a ring built from keys refuses none, five, duplicates and zero keys") {
  CHECK_FALSE(KeyRing::from_keys({}).ok());
  std::vector<ClusterKey> five;
  for (unsigned char i = 1; i <= 5; ++i) {
    std::array<unsigned char, 32> b{};
    b[0] = i;
    five.push_back(make_cluster_key(b));
  }
  CHECK_FALSE(KeyRing::from_keys(five).ok());
  five.pop_back();
  CHECK(KeyRing::from_keys(five).ok());
  CHECK_FALSE(KeyRing::from_keys({make_cluster_key(counting_bytes()), make_cluster_key(counting_bytes())}).ok());
  CHECK_FALSE(KeyRing::from_keys({ClusterKey{}}).ok());
}

TEST_CASE("a key file readable only by its owner loads") {
  TempKeyFile file(std::string("# test\n") + kBase64 + "\n");
  REQUIRE(::chmod(file.path.c_str(), 0600) == 0);
  auto ring = load_key_file(file.path);
  REQUIRE(ring.ok());
  CHECK(ring->sending().bytes == counting_bytes());
}

TEST_CASE("a key file readable by group or others is refused with the chmod to run") {
  TempKeyFile file(std::string(kBase64) + "\n");
  for (const mode_t mode : {0644, 0640, 0604, 0620, 0602, 0610}) {
    CAPTURE(mode);
    REQUIRE(::chmod(file.path.c_str(), mode) == 0);
    auto ring = load_key_file(file.path);
    REQUIRE_FALSE(ring.ok());
    CHECK(ring.error().message.find("chmod 600 " + file.path) != std::string::npos);
  }
}

TEST_CASE("a key file reached through a symbolic link is refused, the link never followed") {
  TempKeyFile file(std::string(kBase64) + "\n");
  REQUIRE(::chmod(file.path.c_str(), 0600) == 0);
  const std::string link = file.path + ".link";
  REQUIRE(::symlink(file.path.c_str(), link.c_str()) == 0);
  auto ring = load_key_file(link);
  ::unlink(link.c_str());
  REQUIRE_FALSE(ring.ok());
  CHECK(ring.error().message.find("symbolic link") != std::string::npos);
  CHECK(ring.error().message.find("readlink -f " + link) != std::string::npos);
}

TEST_CASE("a FIFO named as the key file is refused at once, never waited on") {
  char dir[] = "/tmp/shoal-key-fifo-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/cluster.key";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto loading = std::async(std::launch::async, [&] { return load_key_file(fifo); });
  const bool prompt = loading.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  if (!prompt) {  // let the blocked open return, so the test ends
    const int unblock = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (unblock >= 0) ::close(unblock);
  }
  auto ring = loading.get();
  ::unlink(fifo.c_str());
  ::rmdir(dir);
  CHECK_MESSAGE(prompt, "blocked on a FIFO");
  REQUIRE_FALSE(ring.ok());
  CHECK(ring.error().message.find("not a regular file") != std::string::npos);
}

TEST_CASE("a key file owned by another user than this one or root is refused with the chown to run") {
  if (::geteuid() != 0) return;  // only root can give a file away
  TempKeyFile file(std::string(kBase64) + "\n");
  REQUIRE(::chmod(file.path.c_str(), 0600) == 0);
  REQUIRE(::chown(file.path.c_str(), 65534, static_cast<gid_t>(-1)) == 0);
  auto ring = load_key_file(file.path);
  REQUIRE_FALSE(ring.ok());
  CHECK(ring.error().message.find("owned by uid 65534") != std::string::npos);
  CHECK(ring.error().message.find("chown 0 " + file.path) != std::string::npos);
  REQUIRE(::chown(file.path.c_str(), 0, static_cast<gid_t>(-1)) == 0);
  CHECK(load_key_file(file.path).ok());
}

TEST_CASE("an error in a key file names the file and the line") {
  TempKeyFile file("\n\nzzzz\n");
  REQUIRE(::chmod(file.path.c_str(), 0600) == 0);
  auto ring = load_key_file(file.path);
  REQUIRE_FALSE(ring.ok());
  CHECK(ring.error().message.find(file.path + ": line 3:") == 0);
}

TEST_CASE("a missing key file, a directory and a file over 64 KiB are refused") {
  auto missing = load_key_file("/nonexistent/shoal/cluster.key");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("/nonexistent/shoal/cluster.key") != std::string::npos);

  char dir[] = "/tmp/shoal-key-dir-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  REQUIRE(::chmod(dir, 0700) == 0);
  auto directory = load_key_file(dir);
  ::rmdir(dir);
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.error().message.find("not a regular file") != std::string::npos);

  TempKeyFile big(std::string(kBase64) + "\n" + std::string(kMaxKeyFileBytes, '#'));
  REQUIRE(::chmod(big.path.c_str(), 0600) == 0);
  auto large = load_key_file(big.path);
  REQUIRE_FALSE(large.ok());
  CHECK(large.error().message.find("bytes") != std::string::npos);
}

TEST_CASE("a generated key parses back, as a file too, and two generated keys differ") {
  const std::string a = generate_key_text();
  const std::string b = generate_key_text();
  CHECK(a.front() == '#');
  auto ring_a = parse_key_text(a, "generated");
  auto ring_b = parse_key_text(b, "generated");
  REQUIRE(ring_a.ok());
  REQUIRE(ring_b.ok());
  CHECK(ring_a->size() == 1);
  CHECK(ring_a->sending().bytes != ring_b->sending().bytes);

  TempKeyFile file(a);
  REQUIRE(::chmod(file.path.c_str(), 0600) == 0);
  auto loaded = load_key_file(file.path);
  REQUIRE(loaded.ok());
  CHECK(loaded->sending().bytes == ring_a->sending().bytes);
}
