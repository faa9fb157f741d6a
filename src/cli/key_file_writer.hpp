// Writing a cluster key file safely: a new file (never an existing one, never through a symbolic link),
// mode 0600 from its first byte, synced before it is reported written. Used by `shoal keygen --output`
// and by `shoal demo`, whose hosts share a key made for the run.
#pragma once

#include <optional>
#include <string>

namespace shoal::cli {

// Creates `path` with `text`; nullopt when written, else why not (errno's text).
std::optional<std::string> write_new_key_file(const std::string& path, const std::string& text);

// A fresh key in a new private directory (mode 0700) under $TMPDIR or /tmp, removed with this object.
class TemporaryKeyFile {
 public:
  TemporaryKeyFile() = default;
  TemporaryKeyFile(const TemporaryKeyFile&) = delete;
  TemporaryKeyFile& operator=(const TemporaryKeyFile&) = delete;
  ~TemporaryKeyFile();

  // Makes the directory and the key; the error says why not.
  std::optional<std::string> create();
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

}  // namespace shoal::cli
