// FileMount: a host directory, or a single host file, the code may use at a normalised mount
// path. Files written to read-write mounts are captured into the result after the run, and what
// a run may add to a read-write directory while it runs is bounded (docs/mounts.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/status.hpp"

namespace codeact {

enum class MountMode { kReadWrite, kReadOnly };

// What the host path is. A file mount shows that one file at its mount path (which then names
// the file inside the sandbox, e.g. /data/config.json) and nothing else of its host directory.
// The file is bound in place: the code may read it (ro) or rewrite it in place (rw: open with
// "w"/"r+", truncate), but not rename another file onto it, delete it or replace it atomically
// (EXDEV: the rename crosses the bind; EACCES where Landlock refuses it first).
enum class MountKind { kDirectory, kFile };

struct FileMount {
  std::string host_path;   // must exist, a directory or a regular file, not a symlink
  std::string mount_path;  // normalised "/a/b"
  MountMode mode = MountMode::kReadWrite;
  std::int64_t write_bytes_limit = 1LL << 20;  // captured bytes from this mount
  // Set by ValidateMount from what host_path is (a caller's value is overwritten).
  MountKind kind = MountKind::kDirectory;
  // What a run may add to a read-write directory while it runs, in allocated bytes (st_blocks)
  // and in entries, over what it held when the run started; past either the run ends as
  // `disk_limit` (the host's disk watch, docs/mounts.md). The working directory mount
  // (--workdir) is also held to max_workdir_bytes. A file mount is bounded by
  // max_file_size_bytes (RLIMIT_FSIZE) instead.
  std::int64_t disk_bytes_limit = 256LL << 20;  // 256 MiB
  std::int64_t disk_files_limit = 65536;
};

// "\" becomes "/", "." and repeated separators drop, a leading "/" is added;
// "..", an empty path and "/" itself are rejected.
StatusOr<std::string> NormaliseMountPath(std::string_view path);

// Checks the host path (a directory or a regular file: no symlink, device, FIFO or socket),
// resolves it and sets `kind`; normalises the mount path. Returns the mount ready to use.
StatusOr<FileMount> ValidateMount(FileMount mount);

// Whether validated mounts can be shown together. Refused: two mounts at one mount path; a mount
// beneath a file mount's path (a file holds no entries); a file mount beneath another mount's
// path (its mount point would have to be made inside that mount's host directory); a read-only
// file mount whose host file a read-write mount also reaches (the same file under a read-write
// directory, or the same file read-write), which would make it writable after all.
Status CheckMountLayout(const std::vector<FileMount>& mounts);

std::string_view MountModeName(MountMode mode);  // "rw" / "ro"
std::string_view MountKindName(MountKind kind);  // "directory" / "file"

}  // namespace codeact
