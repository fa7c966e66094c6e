#include "os/sigpipe_block.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>

namespace codeact::internal {

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

}  // namespace codeact::internal
