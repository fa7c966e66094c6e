// TasksOfRealUid: what RLIMIT_NPROC counts for a uid, read from /proc.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace codeact::internal {

// The tasks (processes and threads) whose real uid is `uid`, as /proc shows them now: what
// RLIMIT_NPROC counts for that uid. Those /proc hides (another pid namespace) are not counted.
std::int64_t TasksOfRealUid(uid_t uid);

}  // namespace codeact::internal
