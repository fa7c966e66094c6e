#include "os/pipe_io.hpp"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "os/errno_status.hpp"
#include "os/sigpipe_block.hpp"

namespace codeact::internal {
namespace {

constexpr std::size_t kReadChunkBytes = 64 * 1024;
constexpr std::size_t kDrainBudgetBytes = 1024 * 1024;

}  // namespace

void CappedBuffer::Append(const char* data, std::size_t size) {
  total_ += static_cast<std::int64_t>(size);
  const std::int64_t cap = std::max<std::int64_t>(cap_, 0);
  const std::int64_t room = cap - static_cast<std::int64_t>(data_.size());
  if (static_cast<std::int64_t>(size) > room) truncated_ = true;
  if (room > 0) data_.append(data, static_cast<std::size_t>(std::min<std::int64_t>(room, size)));
}

bool DrainAvailable(int fd, CappedBuffer& out) {
  char buffer[kReadChunkBytes];
  std::size_t drained = 0;
  while (drained < kDrainBudgetBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      out.Append(buffer, static_cast<std::size_t>(n));
      drained += static_cast<std::size_t>(n);
    } else if (n == 0) {
      return false;
    } else if (errno == EINTR) {
      continue;
    } else {
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
  }
  return true;
}

std::optional<std::string> ReadToEnd(int fd, std::size_t max_bytes) {
  std::string text;
  char chunk[16 * 1024];
  while (text.size() < max_bytes) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0 && errno != EINTR) return std::nullopt;
    if (n > 0) text.append(chunk, static_cast<std::size_t>(n));
  }
  return text;
}

Status WriteAll(int fd, std::string_view data) {
  ScopedSigpipeBlock no_sigpipe;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd pfd{fd, POLLOUT, 0};
      if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) return ErrnoStatus("poll", errno);
      continue;
    }
    if (errno == EPIPE) return Unavailable("write failed: the reader closed the pipe");
    return ErrnoStatus("write", errno);
  }
  return Status::Ok();
}

StatusOr<std::size_t> WriteSome(int fd, std::string_view data) {
  ScopedSigpipeBlock no_sigpipe;
  while (true) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::size_t{0};
    if (errno == EPIPE) return Unavailable("write failed: the reader closed the pipe");
    return ErrnoStatus("write", errno);
  }
}

}  // namespace codeact::internal
