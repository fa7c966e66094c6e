// The POSIX helpers of every module (the one place for them): an owned fd, errno as text and as
// a Status, lexical path containment, close-on-exec pipes, and a guard that keeps SIGPIPE from
// killing the host while it writes to a child. UniqueFd, ErrnoText and PathWithin are
// header-only, so the sandbox launcher and the guard module use them without posix_util.cpp
// (which needs codeact/status.hpp's status.cpp).
#pragma once

#include <signal.h>
#include <string.h>
#include <unistd.h>

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
  void reset(int fd = -1) {
    if (fd_ >= 0) {
      // Linux releases the descriptor even when close reports EINTR; retrying could close a
      // descriptor another thread has just been given.
      ::close(fd_);
    }
    fd_ = fd;
  }

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
inline std::string ErrnoText(int err) {
  char buffer[256];
  // GNU strerror_r: returns a pointer to the text, which may or may not be `buffer`.
  return ::strerror_r(err, buffer, sizeof buffer);
}

// Whether `path` is `dir` or lies beneath it, compared by components of the text alone: both are
// absolute and normalized (no ".", "..", repeated or trailing '/' other than the root itself), as
// canonical paths are. An empty `dir` holds nothing.
inline bool PathWithin(std::string_view path, std::string_view dir) {
  if (dir.empty() || !path.starts_with(dir)) return false;
  return path.size() == dir.size() || dir.back() == '/' || path[dir.size()] == '/';
}

// The tasks (processes and threads) whose real uid is `uid`, as /proc shows them now: what
// RLIMIT_NPROC counts for that uid. Those /proc hides (another pid namespace) are not counted.
std::int64_t TasksOfRealUid(uid_t uid);

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
