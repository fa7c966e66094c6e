// The process level's run identity (host side; the launcher's is sandbox/run_identity.hpp): what
// the process level needs on a root host to run a child as its own unprivileged uid — idmapped
// trees of the mounts, made here before the fork (the child attaches them in its private mount
// namespace, process/launch.hpp), and the probe that tells whether this host allows a private mount
// namespace at all (a container without CAP_SYS_ADMIN does not).
#pragma once

#include <sys/types.h>

#include <string>

#include "codeact/status.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {

// A detached, nosuid/nodev tree of `host_path` in which `run_uid` acts as the directory's owner
// (idmapped); a plain tree where the filesystem cannot be idmapped.
StatusOr<UniqueFd> MountTree(const std::string& host_path, bool read_only, uid_t run_uid);

// Whether a child can unshare its mount namespace here (checked once, in a forked child).
bool PrivateMountNamespaceWorks();

}  // namespace codeact::internal
