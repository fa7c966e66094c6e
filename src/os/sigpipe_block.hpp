// ScopedSigpipeBlock: keeps SIGPIPE from killing the host while a thread writes to a child.
#pragma once

#include <signal.h>

namespace codeact::internal {

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
