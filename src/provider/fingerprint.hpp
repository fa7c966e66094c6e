// The config fingerprint of a RunSnapshot: equal fingerprints may share a warm child or a
// warm sandbox; anything that changes how a child must be started changes it.
#pragma once

#include <cstdint>
#include <string>

#include "codeact/executor.hpp"

namespace codeact::internal {

std::string ComputeFingerprint(const RunSnapshot& snapshot, std::uint64_t tool_registry_version,
                               const ExecutorOptions& executor);

}  // namespace codeact::internal
