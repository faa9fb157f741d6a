// Cluster keys: parsing the key file, its permission check, key ids and the key ring (libsodium only).
#include "wire/cluster_key.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace shoal::wire {
namespace {

constexpr std::string_view kIdContext = "shoal-cluster-key-id";
constexpr std::string_view kBlanks = " \t\r\v\f";
constexpr std::string_view kExpected = "expected 32 bytes as 64 hex digits or base64";

std::string_view trim(std::string_view s) {
  const size_t first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlanks) - first + 1);
}

bool all_hex(std::string_view s) {
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

// Decodes one trimmed key line. The failure says what the line held, never the line itself.
Status decode_key_line(std::string_view line, std::array<unsigned char, kClusterKeyBytes>& out) {
  // Hex first: 64 hex digits are also valid base64 (of 48 bytes).
  if (line.size() % 2 == 0 && all_hex(line)) {
    if (line.size() != 2 * kClusterKeyBytes) {
      return fail(std::string(kExpected) + ", got " + std::to_string(line.size() / 2) + " bytes (" +
                  std::to_string(line.size()) + " hex digits)");
    }
    size_t n = 0;
    if (sodium_hex2bin(out.data(), out.size(), line.data(), line.size(), nullptr, &n, nullptr) != 0 ||
        n != kClusterKeyBytes) {
      return fail(std::string(kExpected) + ", got hex digits that do not decode");
    }
    return Ok{};
  }
  // Room for whatever the line decodes to, so that a wrong length can be reported as a byte count.
  std::vector<unsigned char> scratch(line.size() / 4 * 3 + 3);
  size_t n = 0;
  const char* end = nullptr;
  const bool decoded = sodium_base642bin(scratch.data(), scratch.size(), line.data(), line.size(), nullptr, &n, &end,
                                         sodium_base64_VARIANT_ORIGINAL) == 0 &&
                       end == line.data() + line.size();
  Status result = Ok{};
  if (!decoded) {
    result = fail(std::string(kExpected) + ", got " + std::to_string(line.size()) +
                  " characters that are neither (base64 needs its '=' padding)");
  } else if (n != kClusterKeyBytes) {
    result = fail(std::string(kExpected) + ", got " + std::to_string(n) + " bytes");
  } else {
    std::memcpy(out.data(), scratch.data(), kClusterKeyBytes);
  }
  sodium_memzero(scratch.data(), scratch.size());
  return result;
}

void require_sodium() {
  if (auto ok = init_sodium(); !ok) {
    std::fprintf(stderr, "shoal: %s\n", ok.error().message.c_str());
    std::abort();
  }
}

}  // namespace

Status init_sodium() {
  // sodium_init is itself thread-safe; the static makes every later call a load.
  static const int rc = sodium_init();
  if (rc < 0) return fail(std::string("libsodium could not initialise (no usable system random source)"));
  return Ok{};
}

ClusterKey::~ClusterKey() { sodium_memzero(bytes.data(), bytes.size()); }

uint32_t cluster_key_id(std::span<const unsigned char, kClusterKeyBytes> key) {
  require_sodium();
  unsigned char digest[32];
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, sizeof digest);
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(kIdContext.data()), kIdContext.size());
  crypto_generichash_update(&state, key.data(), key.size());
  crypto_generichash_final(&state, digest, sizeof digest);
  sodium_memzero(&state, sizeof state);  // it held the key
  return uint32_t(digest[0]) | (uint32_t(digest[1]) << 8) | (uint32_t(digest[2]) << 16) | (uint32_t(digest[3]) << 24);
}

ClusterKey make_cluster_key(std::span<const unsigned char, kClusterKeyBytes> key) {
  ClusterKey k;
  std::memcpy(k.bytes.data(), key.data(), kClusterKeyBytes);
  k.id = cluster_key_id(key);
  return k;
}

Result<KeyRing> KeyRing::from_keys(std::vector<ClusterKey> keys) {
  if (keys.empty()) return fail(std::string("no cluster key"));
  if (keys.size() > kMaxRingKeys) {
    return fail(std::to_string(keys.size()) + " cluster keys; at most " + std::to_string(kMaxRingKeys) +
                " are accepted (two are enough for a rotation)");
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    keys[i].id = cluster_key_id(keys[i].bytes);  // derived, never trusted from the caller
    if (sodium_is_zero(keys[i].bytes.data(), kClusterKeyBytes)) {
      return fail("key " + std::to_string(i + 1) + " is all zeros (what an unset key looks like)");
    }
    for (size_t j = 0; j < i; ++j) {
      if (sodium_memcmp(keys[i].bytes.data(), keys[j].bytes.data(), kClusterKeyBytes) == 0) {
        return fail("key " + std::to_string(i + 1) + " is the same as key " + std::to_string(j + 1));
      }
      // 1 in 2^32 per pair; the id must name one key of the ring, so one of them has to be replaced.
      if (keys[i].id == keys[j].id) {
        return fail("keys " + std::to_string(j + 1) + " and " + std::to_string(i + 1) +
                    " have the same key id; generate a new key instead of the second");
      }
    }
  }
  return KeyRing(std::move(keys));
}

const ClusterKey* KeyRing::find(uint32_t id) const {
  for (const ClusterKey& k : keys_) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

Result<KeyRing> parse_key_text(std::string_view text, std::string_view origin) {
  if (auto ok = init_sodium(); !ok) return fail(ok.error().message);
  const std::string where(origin);
  std::vector<ClusterKey> keys;
  std::vector<size_t> key_lines;  // line number of each key, for duplicate messages
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = trim(text.substr(pos, eol - pos));
    pos = eol + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::string at = where + ": line " + std::to_string(line_no) + ": ";
    if (keys.size() == kMaxRingKeys) {
      return fail(at + "more than " + std::to_string(kMaxRingKeys) +
                  " keys; at most that many are accepted (two are enough for a rotation)");
    }
    ClusterKey key;
    if (auto ok = decode_key_line(line, key.bytes); !ok) return fail(at + ok.error().message);
    if (sodium_is_zero(key.bytes.data(), kClusterKeyBytes)) {
      return fail(at + "the all-zero key is refused (it is what an unset key looks like)");
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      if (sodium_memcmp(keys[i].bytes.data(), key.bytes.data(), kClusterKeyBytes) == 0) {
        return fail(at + "the same key as line " + std::to_string(key_lines[i]));
      }
    }
    key.id = cluster_key_id(key.bytes);
    keys.push_back(key);
    key_lines.push_back(line_no);
  }
  if (keys.empty()) {
    return fail(where +
                ": no key found (one key per line: 64 hex digits, or base64 of 32 bytes as printed by "
                "`openssl rand -base64 32`)");
  }
  auto ring = KeyRing::from_keys(std::move(keys));
  if (!ring) return fail(where + ": " + ring.error().message);
  return ring;
}

Result<KeyRing> load_key_file(const std::string& path) {
  // Not through a link (whoever can change the link chooses the key), and never blocked on a FIFO.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno == ELOOP) {
    return fail("cluster key file " + path +
                " is a symbolic link; shoal reads a key file only where it lies: name the file itself "
                "(readlink -f " + path + ")");
  }
  if (fd < 0) return fail("cannot read cluster key file " + path + ": " + std::strerror(errno));
  // Checked on the open descriptor, so the file judged is the file read.
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return fail("cannot stat cluster key file " + path + ": " + std::strerror(err));
  }
  std::string refusal;
  if (!S_ISREG(st.st_mode)) {
    refusal = "cluster key file " + path + " is not a regular file";
  } else if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    // Its owner could change the key (or chmod it open) whenever it likes.
    refusal = "cluster key file " + path + " is owned by uid " + std::to_string(st.st_uid) +
              ", neither this process's user (uid " + std::to_string(::geteuid()) + ") nor root; run chown " +
              std::to_string(::geteuid()) + " " + path;
  } else if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    refusal =
        "cluster key file " + path + " is accessible by group or others (mode " + mode + "); run chmod 600 " + path;
  } else if (size_t(st.st_size) > kMaxKeyFileBytes) {
    refusal = "cluster key file " + path + " has " + std::to_string(st.st_size) + " bytes, more than a key file's " +
              std::to_string(kMaxKeyFileBytes) + "; is it the right path?";
  }
  if (!refusal.empty()) {
    ::close(fd);
    return fail(refusal);
  }
  // One byte more than the limit, so a file that grew after fstat is still caught.
  std::string text(kMaxKeyFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail("cannot read cluster key file " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    got += size_t(n);
  }
  ::close(fd);
  Result<KeyRing> ring = got > kMaxKeyFileBytes ? Result<KeyRing>(fail("cluster key file " + path + " is larger than " +
                                                                       std::to_string(kMaxKeyFileBytes) + " bytes"))
                                                : parse_key_text(std::string_view(text.data(), got), path);
  sodium_memzero(text.data(), text.size());
  return ring;
}

std::string generate_key_text() {
  require_sodium();
  std::array<unsigned char, kClusterKeyBytes> key;
  do {
    randombytes_buf(key.data(), key.size());
  } while (sodium_is_zero(key.data(), key.size()));  // never in practice; the parser would refuse it
  char b64[sodium_base64_ENCODED_LEN(kClusterKeyBytes, sodium_base64_VARIANT_ORIGINAL)];
  sodium_bin2base64(b64, sizeof b64, key.data(), key.size(), sodium_base64_VARIANT_ORIGINAL);
  std::string text = "# shoal cluster key: the same file on every host of the cluster, mode 600\n";
  text += b64;
  text += '\n';
  sodium_memzero(key.data(), key.size());
  sodium_memzero(b64, sizeof b64);
  return text;
}

}  // namespace shoal::wire
