// Pipe I/O: reading a non-blocking fd into a byte-capped buffer, and writing with SIGPIPE
// blocked so that a reader that died is a Status, not the end of the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/status.hpp"

namespace codeact::internal {

// Appends to a buffer up to a byte cap; past it, keeps counting but stores nothing.
class CappedBuffer {
 public:
  explicit CappedBuffer(std::int64_t cap_bytes) : cap_(cap_bytes) {}
  void Append(const char* data, std::size_t size);
  bool truncated() const { return truncated_; }
  std::int64_t total_bytes() const { return total_; }
  const std::string& data() const { return data_; }
  std::string Take() { return std::move(data_); }

 private:
  std::int64_t cap_;
  std::int64_t total_ = 0;
  bool truncated_ = false;
  std::string data_;
};

// Reads everything available from a non-blocking fd into `out`.
// Returns false on EOF or a hard error (the fd is then finished), true if it would block.
// Also returns true after 1 MiB in one call, so a fast writer cannot pin the caller's loop:
// true always means "poll again".
bool DrainAvailable(int fd, CappedBuffer& out);

// Reads a blocking `fd` to its end, or until at least `max_bytes` are read (a read may take a few
// KiB more); nullopt on a read error. For small files, such as /proc's and /sys's.
std::optional<std::string> ReadToEnd(int fd, std::size_t max_bytes = SIZE_MAX);

// Writes all of `data` to `fd` (blocking or not: EAGAIN waits in poll). SIGPIPE is blocked in
// the calling thread for the duration, so a reader that died gives an UNAVAILABLE status
// instead of killing the host. Blocks until everything is written or the reader is gone.
Status WriteAll(int fd, std::string_view data);

// One non-blocking write: the bytes written (0 when the pipe is full), or UNAVAILABLE when the
// reader is gone. SIGPIPE-safe like WriteAll.
StatusOr<std::size_t> WriteSome(int fd, std::string_view data);

}  // namespace codeact::internal
