// WorkerOutput: a worker's stdout or stderr, read from its pipe on the agent's loop and written to the
// agent's own stdout or stderr one whole line at a time, each line prefixed with the worker's rank
// ("[rank 3] loss 0.12"), so that the output of many workers stays readable and greppable.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace shoal::launcher {

// Splits a byte stream into lines. A line longer than max_line is passed on in pieces, so a worker that
// never writes a newline cannot make the agent buffer without bound.
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = 64 * 1024) : max_line_(max_line) {}
  // Calls `line` for each complete line (without its '\n').
  void feed(std::span<const char> bytes, const std::function<void(std::string_view)>& line);
  // The unterminated rest, at end of stream.
  void flush(const std::function<void(std::string_view)>& line);

 private:
  size_t max_line_;
  std::string partial_;
};

class WorkerOutput : public std::enable_shared_from_this<WorkerOutput> {
 public:
  // Takes ownership of `fd` (non-blocking); writes to `out_fd` (1 or 2).
  WorkerOutput(boost::asio::io_context& io, int fd, int out_fd, std::string prefix);
  // Reads until end of stream; `on_closed` runs once then (the worker and its children closed the pipe).
  void start(std::function<void()> on_closed);
  void close();

 private:
  void read_more();
  void write_line(std::string_view line) const;

  boost::asio::posix::stream_descriptor pipe_;
  int out_fd_;
  std::string prefix_;
  LineSplitter splitter_;
  std::array<char, 16 * 1024> buffer_{};
  std::function<void()> on_closed_;
};

}  // namespace shoal::launcher
