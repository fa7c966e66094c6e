// LineSource and its stream and descriptor readers (mcp_line_source.hpp).
#include "mcp_server/mcp_line_source.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <istream>
#include <utility>

namespace codeact::internal {

bool ReadCappedLine(std::istream& in, std::size_t cap, std::string& line, bool& oversized) {
  line.clear();
  oversized = false;
  bool any = false;
  std::array<char, 64 * 1024> buf;
  for (;;) {
    in.get(buf.data(), static_cast<std::streamsize>(buf.size()), '\n');
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n > 0) {
      any = true;
      if (!oversized) {
        if (line.size() + n > cap) {
          oversized = true;
          std::string().swap(line);
        } else {
          line.append(buf.data(), n);
        }
      }
    }
    if (in.bad()) return any;
    if (in.fail() && !in.eof()) in.clear();  // get() extracted nothing: the next char is '\n'
    if (in.eof()) return any;
    const auto next = in.peek();
    if (next == std::istream::traits_type::eof()) return any;
    if (next == '\n') {
      in.ignore();
      return true;
    }
    // The buffer filled before the line ended: keep reading the same line.
  }
}

LineSource::Next StreamSource::Read(std::string& line, bool& oversized) {
  return ReadCappedLine(in_, cap_, line, oversized) ? Next::kLine : Next::kEnd;
}

int DrainFd(int fd) {
  char buf[256];
  int total = 0;
  pollfd p{fd, POLLIN, 0};
  ssize_t n = 0;
  while (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) && (n = ::read(fd, buf, sizeof buf)) > 0)
    total += static_cast<int>(n);
  return total;
}

LineSource::Next FdSource::Read(std::string& line, bool& oversized) {
  for (;;) {
    while (start_ < buf_.size()) {
      const std::size_t nl = buf_.find('\n', start_);
      const std::size_t end = nl == std::string::npos ? buf_.size() : nl;
      if (end > start_) partial_ = true;
      if (!oversized_) {
        if (line_.size() + (end - start_) > cap_) {
          oversized_ = true;
          std::string().swap(line_);
        } else {
          line_.append(buf_, start_, end - start_);
        }
      }
      start_ = end;
      if (nl != std::string::npos) {
        start_ = nl + 1;
        return Deliver(line, oversized);
      }
    }
    buf_.clear();
    start_ = 0;
    if (eof_) {
      if (partial_) return Deliver(line, oversized);
      return Next::kEnd;
    }
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {fd_, POLLIN, 0}};
    const int first = stop_fd_ >= 0 ? 0 : 1;
    if (::poll(fds + first, static_cast<nfds_t>(2 - first), -1) < 0) {
      if (errno == EINTR) continue;
      eof_ = true;
      continue;
    }
    // A stop request wins over input that arrived at the same time.
    if (stop_fd_ >= 0 && (fds[0].revents & POLLIN)) {
      stop_requests_ = std::max(DrainFd(stop_fd_), 1);
      return Next::kStop;
    }
    if (fds[1].revents == 0) continue;
    char chunk[64 * 1024];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n > 0) {
      buf_.assign(chunk, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      eof_ = true;
    }
  }
}

LineSource::Next FdSource::Deliver(std::string& line, bool& oversized) {
  line = std::move(line_);
  line_.clear();
  oversized = std::exchange(oversized_, false);
  partial_ = false;
  return Next::kLine;
}

}  // namespace codeact::internal
