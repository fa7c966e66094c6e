#include "os/pipe.hpp"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "os/errno_status.hpp"

namespace codeact::internal {

StatusOr<PipeFds> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2(O_CLOEXEC)", errno);
  PipeFds pipe;
  pipe.read.reset(fds[0]);
  pipe.write.reset(fds[1]);
  return pipe;
}

StatusOr<PipeFds> MakeNonBlockingPipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
    return ErrnoStatus("pipe2(O_CLOEXEC | O_NONBLOCK)", errno);
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

}  // namespace codeact::internal
