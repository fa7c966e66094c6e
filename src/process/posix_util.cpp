#include "process/posix_util.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace codeact::internal {

StatusOr<PipeFds> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2(O_CLOEXEC)", errno);
  PipeFds pipe;
  pipe.read.reset(fds[0]);
  pipe.write.reset(fds[1]);
  return pipe;
}

Status SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoStatus("fcntl(O_NONBLOCK)", errno);
  }
  return Status::Ok();
}

StatusCode CodeForErrno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return StatusCode::kNotFound;
    case EACCES:
    case EPERM:
      return StatusCode::kPermissionDenied;
    case EAGAIN:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case E2BIG:
      return StatusCode::kResourceExhausted;
    case EINVAL:
    case ENOEXEC:
    case ELOOP:
    case ENAMETOOLONG:
      return StatusCode::kInvalidArgument;
    default:
      return StatusCode::kInternal;
  }
}

Status ErrnoStatus(std::string_view what, int err) {
  std::string message(what);
  message += " failed: ";
  message += ErrnoText(err);
  return Status(CodeForErrno(err), std::move(message));
}

ScopedSigpipeBlock::ScopedSigpipeBlock() {
  sigemptyset(&pipe_set_);
  sigaddset(&pipe_set_, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_mask_);
}

ScopedSigpipeBlock::~ScopedSigpipeBlock() {
  if (!was_pending_) {
    const timespec no_wait{};
    // A standard signal is pending at most once; EAGAIN ends the loop.
    while (::sigtimedwait(&pipe_set_, nullptr, &no_wait) == SIGPIPE) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

std::int64_t TasksOfRealUid(uid_t uid) {
  std::int64_t tasks = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 0;
  while (const dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::ifstream status(std::string("/proc/") + e->d_name + "/status");
    long real_uid = -1;
    long threads = 0;
    // "Uid:" comes before "Threads:"; the rest of the file is not needed.
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0) {
        real_uid = std::strtol(line.c_str() + 4, nullptr, 10);
        if (real_uid != static_cast<long>(uid)) break;
      } else if (line.rfind("Threads:", 0) == 0) {
        threads = std::strtol(line.c_str() + 8, nullptr, 10);
        break;
      }
    }
    if (real_uid == static_cast<long>(uid)) tasks += threads;
  }
  ::closedir(proc);
  return tasks;
}

}  // namespace codeact::internal
