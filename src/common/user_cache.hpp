// UserCache: the per-user cache directory, where codeact keeps what it may safely reuse across
// invocations (the compiled runner, the child interpreter's version, a passed sandbox probe), so
// that a one-shot `codeact run` does not redo them.
//
// Where: $CODEACT_CACHE_DIR when set (set but empty: no cache), else $XDG_CACHE_HOME/codeact,
// else ~/.cache/codeact of the effective uid. The directory is used only when it is a real
// directory owned by the effective uid and writable by nobody else, in a parent owned by that
// uid or root and writable by nobody else; an entry only when it is a regular file (not a
// symbolic link) owned by the effective uid and writable by nobody else. Each entry is written
// whole (a temporary file renamed over it) and carries what its reader verifies it against
// (`Entry` callers check a digest on every read). Anything unusable is a miss, never an error:
// the caller then does the work itself. The directory is bounded (CacheBounds): entries are keyed
// by what they were made from, so each new build or interpreter adds some, and nothing else
// would ever remove those no longer used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace codeact::internal {

// Past either bound, Prune removes the entries least recently written or linked (by their
// inode's change time, which a hard link updates) until the directory holds 3/4 of both. An
// entry only read (an interpreter's or a sandbox probe's verdict) ages from when it was written;
// pruned, it is a miss, redone once. One build's runner and validator take ~25 entries, ~0.8 MB.
struct CacheBounds {
  std::size_t entries = 512;
  std::int64_t bytes = std::int64_t{32} << 20;
};

class UserCache {
 public:
  // The cache of this process's effective uid, created on first use; nullopt when there is none
  // (disabled, no home, or a directory that fails the checks above).
  static std::optional<UserCache> Open();

  const std::string& dir() const { return dir_; }

  // The content of entry `name` (a plain file name), or nullopt when it is absent, larger than
  // `max_bytes` or fails the ownership checks.
  std::optional<std::string> Read(std::string_view name, std::size_t max_bytes) const;

  // Replaces entry `name` atomically (mode 0644). False when it could not be written. The first
  // write of a process prunes the directory to the default bounds.
  bool Write(std::string_view name, std::string_view content) const;

  // Makes `dest`, a new name on the same file system, a hard link to entry `name` once the entry
  // holds exactly `content` (written first when it is absent or differs): a private directory
  // gets a file without a new inode, which on ext4 cost ~0.1 ms per file created and removed.
  // The link is to the inode that was compared (through /proc/self/fd), so an entry renamed over
  // in between changes nothing. False when it cannot link (another file system, no /proc): the
  // caller then writes `dest` itself. Only for readers that cannot write the entry through the
  // link: another uid (the entry is 0644) or a read-only view of `dest`.
  bool LinkEntry(std::string_view name, std::string_view content, const std::string& dest) const;

  // Removes entry `name` (a stale probe); absent is fine.
  void Remove(std::string_view name) const;

  // Keeps the directory within `bounds` (above), and removes temporary files a writer left more
  // than an hour ago (it died between writing and renaming).
  void Prune(const CacheBounds& bounds) const;

 private:
  explicit UserCache(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace codeact::internal
