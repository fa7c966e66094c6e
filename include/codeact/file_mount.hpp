// FileMount: a host directory the code may use, at a normalised mount path.
// Files written to read-write mounts are captured into the result after the run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "codeact/status.hpp"

namespace codeact {

enum class MountMode { kReadWrite, kReadOnly };

struct FileMount {
  std::string host_path;   // must exist, must be a directory, must not be a symlink
  std::string mount_path;  // normalised "/a/b"
  MountMode mode = MountMode::kReadWrite;
  std::int64_t write_bytes_limit = 1LL << 20;  // captured bytes from this mount
};

// "\" becomes "/", "." and repeated separators drop, a leading "/" is added;
// "..", an empty path and "/" itself are rejected.
StatusOr<std::string> NormaliseMountPath(std::string_view path);

// Checks the host path and normalises the mount path; returns the mount ready to use.
StatusOr<FileMount> ValidateMount(FileMount mount);

std::string_view MountModeName(MountMode mode);  // "rw" / "ro"

}  // namespace codeact
