// SandboxConfig: what the `codeact-sandbox` launcher builds for one child at the `namespaces`
// isolation level, and its command-line form. The host encodes it; the launcher decodes it.
// This header is the whole contract between the two programs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codeact/status.hpp"

namespace codeact::internal {

// Where things appear inside the sandbox.
inline constexpr const char* kSandboxWorkDir = "/work";             // the run's working directory
inline constexpr const char* kSandboxResourceDir = "/opt/codeact";  // runner.py, read-only
inline constexpr unsigned kSandboxUid = 1000;                       // the code's uid and gid inside
// The inode bound of a run's private tmpfs (/tmp, the working directory) and of the host's disk
// watch over the process level's $TMPDIR and working directory: one inode per 4 KiB of its byte
// bound, at least 256 (a kernel tmpfs's default is half the host's pages, so a run of a small
// byte bound could otherwise hold millions of empty files in kernel memory).
constexpr std::int64_t InodesForBytes(std::int64_t bytes) {
  return bytes / 4096 > 256 ? bytes / 4096 : 256;
}
// Exit status of the launcher when a containment step failed (after its setup_error frame).
inline constexpr int kSandboxSetupFailedExit = 125;

struct SandboxBind {
  std::string host_path;     // absolute, existing
  std::string sandbox_path;  // absolute, normalised
  bool read_only = true;
  int tree_fd = -1;  // not encoded: the launcher's detached tree for it (idmap.hpp), if any
};

struct SandboxConfig {
  // A private, empty host directory: the new root's mount point.
  std::string scratch_dir;
  // Host paths shown read-only at the same path (a symlink is recreated as the same symlink;
  // a missing path is skipped): the interpreter's installation.
  std::vector<std::string> system_paths;
  std::vector<SandboxBind> binds;         // after the system paths, in order
  std::int64_t tmp_bytes = 64LL << 20;    // size of the private tmpfs at /tmp
  std::int64_t work_bytes = 256LL << 20;  // size of the private tmpfs at kSandboxWorkDir
  // A root host: the unprivileged host uid (and gid) the launcher drops to after preparing the
  // mounts, and that the code's kSandboxUid maps to. -1: the caller's own ids (a non-root host).
  std::int64_t run_as_uid = -1;
  // RLIMIT_NPROC, set by the launcher once inside its user namespace (-1: not set). The kernel
  // counts a namespace's processes against the limit of the process that made it as well as its
  // own: set before, a non-root host's own processes (every other run of the same user among
  // them) would count against the run's limit and starve its start.
  std::int64_t nproc = -1;
  // The run's cgroup: its join files (RunCgroup::join_files, one per v1 hierarchy), which the
  // launcher joins first (empty: none could be made).
  std::vector<std::string> cgroup_join;
  // A root host's zygote (resources/runner_zygote.py, started with run_as_uid as its own uid): the
  // command is uid 0 of the sandbox's user namespace, with its capabilities there and without the
  // seccomp filter, so that it can fork each run's child into namespaces of its own
  // (zygote_child.hpp). The run uids [first, first + count) are mapped to themselves, so that
  // each such child can become its run's own uid; a root process outside writes that map.
  std::int64_t zygote_uids_first = -1;  // -1: not a zygote
  std::int64_t zygote_uids_count = 0;
  std::vector<std::string> command;  // absolute executable, then its arguments
  // Not encoded: detached trees the launcher prepared for the system paths (-1 where a path is
  // a symlink, missing, or shown by a plain bind).
  std::vector<int> system_trees;
};

inline bool IsZygote(const SandboxConfig& c) { return c.zygote_uids_first >= 0; }

std::vector<std::string> EncodeSandboxArgs(const SandboxConfig& config);
StatusOr<SandboxConfig> DecodeSandboxArgs(const std::vector<std::string>& args);

// The system paths an interpreter under /usr needs (merged-/usr symlinks included).
std::vector<std::string> DefaultSystemPaths();

// A sandbox path must not hide or enter what the sandbox itself provides there.
// Returns the reason, or an empty string when `path` is free for a bind.
std::string ReservedSandboxPath(const std::string& path);

}  // namespace codeact::internal
