// Close-on-exec pipes: a pipe's two owned ends, and the O_NONBLOCK switch for the host's end.
#pragma once

#include "codeact/status.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {

struct PipeFds {
  UniqueFd read;
  UniqueFd write;
};

// pipe2(O_CLOEXEC): both ends blocking; set O_NONBLOCK on the host end only, because the
// flag lives on the open file description and a child must get blocking stdio.
StatusOr<PipeFds> MakePipe();
// pipe2(O_CLOEXEC | O_NONBLOCK): both ends non-blocking, for a pipe within the host (a wake-up).
StatusOr<PipeFds> MakeNonBlockingPipe();
Status SetNonBlocking(int fd);

}  // namespace codeact::internal
