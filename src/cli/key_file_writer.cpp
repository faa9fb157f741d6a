// Key files written with O_EXCL|O_NOFOLLOW and mode 0600 (key_file_writer.hpp).
#include "cli/key_file_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wire/cluster_key.hpp"

namespace shoal::cli {

std::optional<std::string> write_new_key_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return std::string(std::strerror(errno)) + (errno == EEXIST ? " (keygen never overwrites a key)" : "");
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "short write";
      ::close(fd);
      ::unlink(path.c_str());
      return why;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(path.c_str());
    return why;
  }
  if (::close(fd) != 0) return std::string(std::strerror(errno));
  return std::nullopt;
}

TemporaryKeyFile::~TemporaryKeyFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

std::optional<std::string> TemporaryKeyFile::create() {
  if (auto ok = wire::init_sodium(); !ok) return ok.error().message;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/shoal-key-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) return "mkdtemp " + pattern + ": " + std::strerror(errno);
  dir_ = buf.data();
  const std::string path = dir_ + "/cluster.key";
  if (auto failed = write_new_key_file(path, wire::generate_key_text())) return path + ": " + *failed;
  path_ = path;
  return std::nullopt;
}

}  // namespace shoal::cli
