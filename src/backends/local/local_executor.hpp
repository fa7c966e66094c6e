// LocalExecutor: the `process` isolation level — a child CPython started directly under
// rlimits, in its own process group, speaking the bridge protocol with the host.
#pragma once

#include <sys/types.h>

#include <memory>
#include <vector>

#include "codeact/executor.hpp"

namespace codeact::internal {

StatusOr<std::unique_ptr<Executor>> CreateLocalExecutor(const ExecutorOptions& options);

// Pids of the idle warm children of a local executor (empty for any other executor).
std::vector<pid_t> IdleChildPids(const Executor& executor);

}  // namespace codeact::internal
