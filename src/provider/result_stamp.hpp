// StampBackend: the provider's one rule for what a result says of where it ran. Every result the
// provider hands out (a refusal before any run, a run of its executor or of a session) names the
// backend and the isolation level as its executor reports them (Executor::backend,
// Executor::isolation); executors leave these, the duration and the byte budget to the provider
// (CodeActProvider::Vet), and return what only they know.
#pragma once

#include "codeact/execution.hpp"
#include "codeact/executor.hpp"

namespace codeact::internal {

// Fills `result.backend` and `result.isolation` where they are empty.
void StampBackend(ExecutionResult& result, const Executor& executor);

}  // namespace codeact::internal
