// Idmap: detached bind trees, made by a privileged process before the code's identity is
// dropped, and moved into place later by a process that could not have made them itself.
//
// A run's files in a read-write mount must end up owned by the mount directory's owner, never
// by the run's (unprivileged, per-run) uid: an idmapped mount (kernel >= 5.12) whose mapping
// turns the run's uid into the directory's owner does that, and makes the directory writable by
// the run whoever owns it (also a root-owned 0755 directory). The same trees let the sandbox
// show paths its unprivileged uid could not even reach (an interpreter under /root).
// Used by the sandbox launcher (namespaces level) and by the host (process level on a root
// host); errors come back as errno values with the step that failed, for either to report.
#pragma once

#include <sys/types.h>

#include <string>

namespace codeact::internal {

struct IdmapError {
  int err = 0;       // 0: no error
  std::string step;  // e.g. "open_tree(/data)"
};

// A user namespace, held by the returned fd (O_CLOEXEC), whose only mapping is ns_uid -> host_id
// and ns_gid -> host_id: as the idmap of a mount, on-disk owner ns_uid appears as (and files of)
// host_id, and host_id's writes land as ns_uid. Made by a short-lived helper child. Needs
// CAP_SETUID and CAP_SETGID (a root host). Returns -1 and sets `error` on failure.
int MakeIdmapUserns(uid_t ns_uid, gid_t ns_gid, uid_t host_id, IdmapError& error);

// A detached copy (open_tree OPEN_TREE_CLONE, recursive) of the tree at `path`, nosuid and nodev,
// read-only when asked, idmapped through `userns_fd` when it is >= 0. The fd (O_CLOEXEC) is
// attached elsewhere with AttachTree. Needs CAP_SYS_ADMIN in the initial namespaces.
// `idmap_unsupported` is set (and -1 returned) when the filesystem cannot be idmapped, so the
// caller can fall back to a plain bind.
int DetachedTree(const std::string& path, int userns_fd, bool read_only, IdmapError& error,
                 bool* idmap_unsupported = nullptr);

// Opens `path` (relative to `dir_fd`, or absolute with AT_FDCWD) with `flags` | O_CLOEXEC through
// no symbolic link at all (openat2 RESOLVE_NO_SYMLINKS; with `beneath`, RESOLVE_BENEATH too).
// Returns -1 with errno set (ELOOP: a link on the way).
int OpenWithoutLinks(int dir_fd, const char* path, int flags, bool beneath);

// A mount's tree: its host path opened through no link (a mount's host path is stored resolved,
// ValidateMount, so a link on it appeared since: a run that can write a read-write mount above it
// could otherwise choose which host directory a later run's mount shows), then DetachedTree of
// it idmapped so that `run_uid` acts as its owner; a plain tree where the filesystem cannot be
// idmapped. Returns -1 and sets `error`.
int MountTree(const std::string& host_path, bool read_only, uid_t run_uid, IdmapError& error);

// Moves a detached tree onto `target` (an existing file or directory), or onto the one
// `target_fd` is open on (O_PATH will do). Returns 0 or an errno. Async-signal-safe (one system
// call).
int AttachTree(int tree_fd, const char* target);
int AttachTree(int tree_fd, int target_fd);

}  // namespace codeact::internal
