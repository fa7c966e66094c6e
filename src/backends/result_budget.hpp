// The result budget: a run's result fitted into ExecutionLimits::max_result_bytes of JSON, the
// bound on what every surface returns (the library's result, `codeact run`, the MCP server's
// structuredContent). One place, used by both backends and by the provider.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codeact/execution.hpp"
#include "codeact/file_mount.hpp"
#include "codeact/limits.hpp"

namespace codeact::internal {

// Room kept for what is set after the fit: duration_ms (up to 19 digits) and the backend and
// isolation names, where the caller fills them in afterwards.
inline constexpr std::size_t kResultBookkeepingBytes = 64;

// Makes ToJson(result).size() + kResultBookkeepingBytes <= max_result_bytes (taken as at least
// 4 KiB), when it is not so already:
//   1. captured files are omitted, largest first (by their JSON), each listed in omitted_files
//      with the reason "result size limit of N bytes reached" while the list has fewer than
//      CaptureLimits::max_listed_omissions entries and the listed paths take less than a 16th of
//      the budget; the others are counted in one summary entry per mount;
//   2. the final value is dropped if the result does not fit even with empty streams, then
//      stdout and stderr are cut to what fits (their starts kept, the truncated flags set);
//   3. last, for budgets below what the run's other text takes: the omitted list is collapsed
//      to its summaries, the error's text and the message cut, violations dropped.
// A note in `message` says what was cut. Cheap for ordinary results: an upper bound from the
// fields' lengths settles them without serialising anything. `mounts` name the summaries.
void FitResult(ExecutionResult& result, std::int64_t max_result_bytes,
               const std::vector<FileMount>& mounts);
inline void FitResult(ExecutionResult& result, const ExecutionLimits& limits,
                      const std::vector<FileMount>& mounts) {
  FitResult(result, limits.max_result_bytes, mounts);
}

}  // namespace codeact::internal
