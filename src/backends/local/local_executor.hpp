// LocalExecutor: the `process` isolation level — a child CPython started directly under
// rlimits, in its own process group, speaking the bridge protocol with the host.
#pragma once

#include <memory>

#include "codeact/executor.hpp"

namespace codeact::internal {

StatusOr<std::unique_ptr<Executor>> CreateLocalExecutor(const ExecutorOptions& options);

}  // namespace codeact::internal
