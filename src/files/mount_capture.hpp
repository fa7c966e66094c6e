// Mount snapshot and capture: which files a run created or changed in its read-write mounts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codeact/execution.hpp"
#include "codeact/file_mount.hpp"
#include "codeact/limits.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

struct FileStamp {
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};

// (size, mtime, inode) of every regular file under each read-write mount, keyed by a 64-bit hash
// (FNV-1a) of its host path ("host_path/relative"), so that a tree of long paths costs the host
// 32 bytes a file, not the paths. Symlinks, special files and unreadable directories are recorded
// too (from lstat), so that ones that existed before the run are not reported as omitted
// afterwards. A file mount records its one file, keyed by its host path. Read-only mounts are
// not scanned. Symlinks are never followed. Each mount's walk is
// bounded by CaptureLimits::max_scan_entries and max_scan_depth; pass the same limits to
// CaptureChanges. Two paths whose hashes collide could hide a file that was renamed onto the
// other's name without a change of size, mtime or inode: only the run's own output is at stake.
struct CaptureLimits;
class MountSnapshot {
 public:
  static MountSnapshot Take(const std::vector<FileMount>& mounts);
  static MountSnapshot Take(const std::vector<FileMount>& mounts, const CaptureLimits& limits);
  std::size_t size() const { return stamps_.size(); }
  // The stamp recorded for a host path ("host_path/relative"), or null.
  const FileStamp* Find(std::string_view host_path) const;
  // Whether a file of that path hash was recorded with that stamp.
  bool Contains(std::uint64_t path_hash, const FileStamp& stamp) const;

 private:
  std::vector<std::pair<std::uint64_t, FileStamp>> stamps_;  // sorted by hash
};

struct CaptureLimits {
  std::int64_t max_file_bytes = 1LL << 20;
  std::int64_t max_total_bytes = 10LL << 20;
  std::int64_t max_files = 1000;
  // What the captured files and the omitted entries may add to the result JSON (paths, base64
  // data and all): the result's own budget, so that the capture alone always fits it.
  std::int64_t max_json_bytes = 16LL << 20;
  // Bounds on each mount's walk, so that a hostile tree cannot hang the host: entries looked
  // at, and directory nesting below the mount. Beyond them, an `omitted` entry says so.
  std::int64_t max_scan_entries = 100000;
  int max_scan_depth = 64;
  // Omitted files listed one by one; the others are counted in one summary entry per mount.
  std::size_t max_listed_omissions = 100;
};

// The capture limits of a run.
CaptureLimits CaptureLimitsFor(const ExecutionLimits& limits);

struct Capture {
  std::vector<CapturedFile> files;   // sorted by path ("mount_path/relative")
  std::vector<OmittedFile> omitted;  // with the reason
};

// A bounded omitted_files: entries listed one by one up to a number, the others counted, one
// summary entry per mount: {"path": "<mount>/…", "reason": "and 9000 more files omitted: <the
// first three reasons>"}.
class OmissionList {
 public:
  explicit OmissionList(std::size_t max_listed) : max_listed_(max_listed) {}
  bool full() const { return listed_.size() >= max_listed_; }
  std::size_t size() const { return listed_.size() + summaries_.size(); }
  // Listed whether or not the list is full (the caller checks full() for a file's entry; a
  // mount's own entries are always listed).
  void List(OmittedFile entry) { listed_.push_back(std::move(entry)); }
  void Count(std::string_view mount_path, std::string_view reason);
  // The listed entries and the summaries, sorted by path.
  std::vector<OmittedFile> Take();

 private:
  struct Summary {
    std::string mount_path;
    std::int64_t count = 0;
    std::vector<std::string> reasons;  // the first few distinct ones
    bool more_reasons = false;
  };
  std::size_t max_listed_;
  std::vector<OmittedFile> listed_;
  std::vector<Summary> summaries_;
};

// The summary entry for `count` omissions under mount_path.
OmittedFile OmissionSummary(std::string_view mount_path, std::int64_t count,
                            const std::vector<std::string>& reasons, bool more_reasons);

// Files new or changed since `before`, under the read-write mounts. Skips symlinks (reported as
// omitted), hardlinks (st_nlink > 1), anything whose real path leaves the mount. A file mount's
// file is reported at the mount path itself when it changed, under the same limits (the
// hardlink rule aside: the host chose that file). Limits apply
// in order: the number of files, per file, per mount (write_bytes_limit), total, and the JSON
// the file would add to the result (its path counts, escaped, as its base64 data does). Files are
// considered in path order (the mounts in the order of their mount paths) and a file over a
// budget is omitted while later, smaller files may still fit; past max_files none is opened. A
// change that keeps size, mtime and inode (e.g. mtime reset with utime) is not detected.
// `omitted` is sorted by path too, and bounded (OmissionList). The walk holds one directory's
// names at a time per level, the captured files and the listed omissions: never every path.
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
  // Holds no directory: path() is empty and nothing is removed.
  TempDir() = default;
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
