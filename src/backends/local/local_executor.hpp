// LocalExecutor: the local backend — a child CPython under rlimits, in its own process group,
// speaking the bridge protocol with the host; started directly (`process` level) or through the
// codeact-sandbox launcher (`namespaces` level, sandbox_plan.hpp). Warm pool: warm_pool.hpp.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/executor_introspection.hpp"
#include "backends/local/warm_pool.hpp"
#include "codeact/executor.hpp"

namespace codeact::internal {

StatusOr<std::unique_ptr<Executor>> CreateLocalExecutor(const ExecutorOptions& options);

}  // namespace codeact::internal
