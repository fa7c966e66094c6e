// The runner's files for a local executor's children: every module of resources/runner.py
// compiled to .pyc in a private directory, compiled once per user and kept in the per-user
// cache (common/user_cache.hpp) keyed by the hash of the sources and the embedded libpython's
// version, and verified against the hash of each .pyc on every use.
#pragma once

#include <optional>
#include <string>

#include "codeact/status.hpp"
#include "files/mount_capture.hpp"

namespace codeact::internal {

struct RunnerFilesOptions {
  bool runtime_guard = false;  // the runner must then run from the private directory
  // Whether the per-user cache may be read and filled: only where no run can write it (the
  // caller's decision: a run of another uid, or one in the sandbox, which does not show it).
  bool use_cache = false;
};

// Children start from the runner compiled once rather than compiling their script on every start
// (~8 ms of a ~33 ms cold start on the 2-core test VM): every module as a .pyc in a private
// directory, which the namespaces level shows at kSandboxResourceDir. A cache hit needs no
// embedded interpreter; a miss compiles with it (Validator::Embedded). If compiling fails the
// children run the sources, as they always could. With the runtime guard the runner always runs
// from that directory (the sources copied there when compiling failed), because the namespaces
// level shows the guard's module from there too. `runner` (resources/runner.py) becomes the path
// children start; nullopt: they start the sources where they are.
StatusOr<std::optional<TempDir>> PrivateRunnerDir(std::string& runner,
                                                  const RunnerFilesOptions& options);

// The name of the runner's cache entry for the sources beside `runner` (tests look at it).
StatusOr<std::string> RunnerCacheEntryName(const std::string& runner);

}  // namespace codeact::internal
