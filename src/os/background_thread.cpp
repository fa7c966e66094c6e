#include "os/background_thread.hpp"

#include <pthread.h>
#include <sched.h>

namespace codeact::internal {

void YieldOnWakeUp() {
  const sched_param param{};  // SCHED_BATCH takes priority 0
  (void)::pthread_setschedparam(::pthread_self(), SCHED_BATCH, &param);
}

}  // namespace codeact::internal
