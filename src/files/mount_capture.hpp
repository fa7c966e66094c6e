// Mount snapshot and capture: which files a run created or changed in its read-write mounts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codeact/execution.hpp"
#include "codeact/file_mount.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

struct FileStamp {
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};

// (size, mtime, inode) of every regular file under each read-write mount, keyed by host path
// ("host_path/relative"). Symlinks, special files and unreadable directories are recorded too
// (from lstat), so that ones that existed before the run are not reported as omitted afterwards.
// Read-only mounts are not scanned. Symlinks are never followed. Each mount's walk is bounded by
// CaptureLimits::max_scan_entries and max_scan_depth; pass the same limits to CaptureChanges.
struct CaptureLimits;
class MountSnapshot {
 public:
  static MountSnapshot Take(const std::vector<FileMount>& mounts);
  static MountSnapshot Take(const std::vector<FileMount>& mounts, const CaptureLimits& limits);
  const std::map<std::string, FileStamp>& files() const { return files_; }

 private:
  std::map<std::string, FileStamp> files_;
};

struct CaptureLimits {
  std::int64_t max_file_bytes = 1LL << 20;
  std::int64_t max_total_bytes = 10LL << 20;
  // Bounds on each mount's walk, so that a hostile tree cannot hang the host: entries looked
  // at, and directory nesting below the mount. Beyond them, an `omitted` entry says so.
  std::int64_t max_scan_entries = 100000;
  int max_scan_depth = 64;
};

struct Capture {
  std::vector<CapturedFile> files;    // sorted by path ("mount_path/relative")
  std::vector<OmittedFile> omitted;   // with the reason
};

// Files new or changed since `before`, under the read-write mounts. Skips symlinks (reported as
// omitted), hardlinks (st_nlink > 1), anything whose real path leaves the mount. Limits apply
// in order: per file, per mount (write_bytes_limit), total. Files are considered in path order
// and a file over a budget is omitted while later, smaller files may still fit. A change that
// keeps size, mtime and inode (e.g. mtime reset with utime) is not detected. `omitted` is sorted
// by path too.
Capture CaptureChanges(const MountSnapshot& before, const std::vector<FileMount>& mounts,
                       const CaptureLimits& limits);

// "text/plain", "application/json", "image/png", ... from the extension;
// "application/octet-stream" when unknown.
std::string MediaTypeForPath(const std::string& path);

// A fresh private (0700) directory under $TMPDIR (when absolute) or /tmp, removed recursively
// (never following symlinks) on destruction. Its name carries this process's owner tag
// (scratch_owner.hpp), so that a later start can remove it should the process die first.
class TempDir {
 public:
  static StatusOr<TempDir> Create(const std::string& prefix = "codeact-run-");
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Removes a tree without following symlinks. Best effort; returns false if anything remained.
bool RemoveTree(const std::string& path);

}  // namespace codeact::internal
