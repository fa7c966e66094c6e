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

}  // namespace codeact::internal
