// The control socket's request table: one request line ("members", "view", "ckpt ls") in, one JSON
// document out. Subsystems register their requests here; nothing about sockets.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::agent {

// Request lines longer than this are refused before they are parsed.
inline constexpr size_t kMaxControlRequestBytes = 1024;

class ControlHandlers {
 public:
  // Returns a complete JSON document. `args` are the words after the request's name.
  using Handler = std::function<std::string(std::span<const std::string> args)>;

  // Registers (or replaces) the handler of one request name.
  void add(std::string name, std::string summary, Handler handler);

  // The reply to one request line (without its newline). Unknown requests, empty lines and bytes
  // outside printable ASCII get an error document, never an exception.
  std::string dispatch(std::string_view line) const;

  // {"error": message, "requests": [...names]}
  std::string error_reply(std::string_view message) const;

 private:
  struct Entry {
    std::string name;
    std::string summary;
    Handler handler;
  };
  std::vector<Entry> entries_;
};

}  // namespace shoal::agent
