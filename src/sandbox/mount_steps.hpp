// MountSteps: mounts the sandbox makes both when the launcher builds its root (root_fs.hpp) and
// when a zygote's child makes its own /proc, /tmp and working directory (zygote_child.hpp). Each
// step succeeds or fails the start (setup_report.hpp).
#pragma once

#include <string>

namespace codeact::internal {

// A tmpfs at `target` (nosuid, nodev) with `options` (size=, mode=, ...).
void MountTmpfs(const std::string& target, const std::string& options, const std::string& step);

// A proc of the caller's pid namespace at root/proc (`root` "" for the caller's own root), with
// /proc/sys read-only and the files about the host masked (root/dev/null must exist).
void MountMaskedProc(const std::string& root);

// MountMaskedProc (or, `masked` false, the proc alone), except where the kernel refuses a new proc
// with EPERM: inside a container whose own /proc is partly covered (the runtime's masks over
// /proc/kcore, /proc/keys, ...), a user namespace may mount no proc that would show more than that
// one does (fs/namespace.c, mount_too_revealing). Returns false then, having mounted nothing: the
// sandbox has an empty /proc, which hides more, not less (docs/containers.md says what it costs).
// Any other failure fails the start.
bool MountProcUnlessRefused(const std::string& root, bool masked);

}  // namespace codeact::internal
