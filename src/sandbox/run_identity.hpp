// RunIdentity: on a root host, the launcher's privileged steps before it becomes the run's own
// unprivileged uid. While still root it prepares every tree the sandbox will show (idmap.hpp):
// the system paths (which the run's uid might not even reach), the runner's directory, and the
// mounts — nosuid, nodev, idmapped so the run's uid acts as the mount directory's owner. It
// hands the scratch directory to that uid, then drops to it for good (groups, gid, uid), so that
// the user namespace it enters next maps the code's uid to that uid, never to host root.
// Each step succeeds or fails the start (setup_report.hpp).
#pragma once

#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {

// Fills config.system_trees and each bind's tree_fd; chowns the scratch directory. A root that
// open_tree refuses (EPERM on the first tree: no CAP_SYS_ADMIN) makes no tree at all and binds
// the paths itself after the drop, as an unprivileged caller does (plain binds, no idmap).
void PrepareTreesAsRoot(SandboxConfig& config);

// setgroups({}), setresgid, setresuid to `uid`; the process stays dumpable so that it may write
// its own user namespace's maps.
void DropToRunUid(uid_t uid);

// A zygote's identity (SandboxConfig::zygote_uids_first): drops to config.run_as_uid and enters
// a new user namespace in which that uid is 0 and the run uids are themselves. A map of more
// than the writer's own uid needs CAP_SETUID over the parent namespace, so a helper forked
// while still root writes it, and exits.
void EnterUserNamespaceAsZygote(const SandboxConfig& config);

}  // namespace codeact::internal
