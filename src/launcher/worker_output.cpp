// WorkerOutput: line splitting and the prefixed copy of a worker's pipe.
#include "launcher/worker_output.hpp"

#include <unistd.h>

#include <cerrno>

namespace shoal::launcher {

void LineSplitter::feed(std::span<const char> bytes, const std::function<void(std::string_view)>& line) {
  size_t begin = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    const std::string_view piece(bytes.data() + begin, i - begin);
    if (partial_.empty()) {
      line(piece);
    } else {
      partial_.append(piece);
      line(partial_);
      partial_.clear();
    }
    begin = i + 1;
  }
  partial_.append(bytes.data() + begin, bytes.size() - begin);
  while (partial_.size() >= max_line_) {
    line(std::string_view(partial_).substr(0, max_line_));
    partial_.erase(0, max_line_);
  }
}

void LineSplitter::flush(const std::function<void(std::string_view)>& line) {
  if (!partial_.empty()) line(partial_);
  partial_.clear();
}

WorkerOutput::WorkerOutput(boost::asio::io_context& io, int fd, int out_fd, std::string prefix)
    : pipe_(io, fd), out_fd_(out_fd), prefix_(std::move(prefix)) {}

void WorkerOutput::start(std::function<void()> on_closed) {
  on_closed_ = std::move(on_closed);
  read_more();
}

void WorkerOutput::close() {
  boost::system::error_code ec;
  pipe_.close(ec);
}

void WorkerOutput::read_more() {
  pipe_.async_read_some(boost::asio::buffer(buffer_),
                        [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                          const auto emit = [&](std::string_view line) { self->write_line(line); };
                          if (n > 0) self->splitter_.feed(std::span<const char>(self->buffer_.data(), n), emit);
                          if (ec) {
                            self->splitter_.flush(emit);
                            self->close();
                            if (self->on_closed_) std::exchange(self->on_closed_, nullptr)();
                            return;
                          }
                          self->read_more();
                        });
}

// One write per line, so lines of different workers never interleave within a line.
void WorkerOutput::write_line(std::string_view line) const {
  std::string text;
  text.reserve(prefix_.size() + line.size() + 1);
  text.append(prefix_).append(line).push_back('\n');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(out_fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our own output is gone (a closed terminal): drop, never block the loop
    done += static_cast<size_t>(n);
  }
}

}  // namespace shoal::launcher
