// HyperlightExecutor: runs code inside a Hyperlight micro-VM through worker processes
// (resources/hyperlight_worker.py, which drives the hyperlight-sandbox Python SDK).
//
// A worker keeps warm sandboxes per config fingerprint and serves one run at a time; idle
// workers are reused. The SDK has no execution timeout, so the wall clock is enforced here by
// killing the worker's process group (a new worker serves the next run). Output caps, the
// tool-call budget, frame and result sizes are enforced by the same host loop as the local
// backend. Files the code writes under /output are captured like those of a read-write mount.
// The first run of a fingerprint on a worker also builds the sandbox, within its wall clock.
// When the SDK, the guest or a hypervisor is missing, runs end as `unavailable` with the
// worker's reason; no run waits for more than its wall clock.
#pragma once

#include <memory>

#include "codeact/executor.hpp"

namespace codeact::internal {

StatusOr<std::unique_ptr<Executor>> CreateHyperlightExecutor(const ExecutorOptions& options);

}  // namespace codeact::internal
