// Small POSIX helpers private to src/process: an owned fd, close-on-exec pipes, errno as a
// Status, and a guard that keeps SIGPIPE from killing the host while it writes to a child.
#pragma once

#include <signal.h>

#include <string>
#include <string_view>

#include "codeact/status.hpp"

namespace codeact::internal {

// Owns one file descriptor; closes it on destruction. -1 means "none".
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct PipeFds {
  UniqueFd read;
  UniqueFd write;
};

// pipe2(O_CLOEXEC): both ends blocking; set O_NONBLOCK on the host end only, because the
// flag lives on the open file description and a child must get blocking stdio.
StatusOr<PipeFds> MakePipe();
Status SetNonBlocking(int fd);

// strerror text for an errno value (thread-safe).
std::string ErrnoText(int err);
// The canonical code for a failed system call.
StatusCode CodeForErrno(int err);
// "<what> failed: <strerror(err)>" with the matching code.
Status ErrnoStatus(std::string_view what, int err);

// Blocks SIGPIPE in the calling thread for its lifetime, so a write to a pipe whose reader
// died fails with EPIPE instead of killing the host; on exit it discards a SIGPIPE that the
// guarded writes raised (one that was already pending before is left alone).
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock();
  ~ScopedSigpipeBlock();
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t pipe_set_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

}  // namespace codeact::internal
