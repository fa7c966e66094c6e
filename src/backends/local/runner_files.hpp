// The runner's files for a local executor's children: every module of resources/runner.py (and,
// when asked, of the validator package) compiled to .pyc in a private directory, compiled once
// per user and kept in the per-user cache (common/user_cache.hpp) keyed by the sources' identity
// (`stat`: device, inode, size, modification and change times) and the embedded libpython's
// version, and verified against the hash of each .pyc on every use.
#pragma once

#include <optional>
#include <string>

#include "codeact/status.hpp"
#include "files/mount_capture.hpp"

namespace codeact::internal {

struct RunnerFilesOptions {
  // The runner must run from the private directory: the guard's module, or the validator
  // package (StageValidatorPackage), goes there too.
  bool required = false;
  // Whether the per-user cache may be read and filled: only where no run can write it (the
  // caller's decision: a run of another uid, or one in the sandbox, which does not show it).
  // With it each .pyc in the private directory is a hard link to a cache entry
  // (UserCache::LinkEntry), which such runs cannot write through the link either.
  bool use_cache = false;
};

// Children start from the runner compiled once rather than compiling their script on every start
// (~8 ms of a ~33 ms cold start on the 2-core test VM): every module as a .pyc in a private
// directory, which the namespaces level shows at kSandboxResourceDir. A cache hit needs no
// embedded interpreter; a miss compiles with it (Validator::Embedded). If compiling fails the
// children run the sources, as they always could. With the runtime guard (or the validator
// package) the runner always runs from that directory (the sources copied there when compiling
// failed), because the namespaces level shows the guard's module (and the package) from there
// too. `runner` (resources/runner.py) becomes the path
// children start; nullopt: they start the sources where they are.
StatusOr<std::optional<TempDir>> PrivateRunnerDir(std::string& runner,
                                                  const RunnerFilesOptions& options);

// Stages the validator package at `package_dir` (its *.py but __main__) into `dir`, a directory
// PrivateRunnerDir made, as the package `validator` beside the runner, for children that
// validate their code themselves: compiled and cached like the runner's modules (`use_cache` as
// above), its sources copied where it cannot be compiled.
Status StageValidatorPackage(const std::string& dir, const std::string& package_dir,
                             bool use_cache);

// The name of the runner's cache entry for the sources beside `runner` (tests look at it).
StatusOr<std::string> RunnerCacheEntryName(const std::string& runner);

}  // namespace codeact::internal
