#include "os/pipe.hpp"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "os/errno_status.hpp"

namespace codeact::internal {

namespace {

StatusOr<PipeFds> Pipe2(int flags, const char* call) {
  int fds[2];
  if (::pipe2(fds, flags) != 0) return ErrnoStatus(call, errno);
  PipeFds pipe;
  pipe.read.reset(fds[0]);
  pipe.write.reset(fds[1]);
  return pipe;
}

}  // namespace

StatusOr<PipeFds> MakePipe() { return Pipe2(O_CLOEXEC, "pipe2(O_CLOEXEC)"); }

StatusOr<PipeFds> MakeNonBlockingPipe() {
  return Pipe2(O_CLOEXEC | O_NONBLOCK, "pipe2(O_CLOEXEC | O_NONBLOCK)");
}

Status SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoStatus("fcntl(O_NONBLOCK)", errno);
  }
  return Status::Ok();
}

}  // namespace codeact::internal
