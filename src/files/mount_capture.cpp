// Mount snapshot and capture. The walk never follows a symlink: every directory is
// opened relative to its parent with O_NOFOLLOW, and every file is opened the same way, then
// checked again on the open descriptor, so swapping an entry for a link mid-walk gains nothing.
#include "files/mount_capture.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "json/result_size.hpp"
#include "os/errno_status.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {
namespace {

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using UniqueDir = std::unique_ptr<DIR, DirCloser>;

constexpr int kDirOpenFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

FileStamp StampOf(const struct stat& st) {
  FileStamp stamp;
  stamp.size = static_cast<std::int64_t>(st.st_size);
  stamp.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL +
                   static_cast<std::int64_t>(st.st_mtim.tv_nsec);
  stamp.inode = static_cast<std::uint64_t>(st.st_ino);
  return stamp;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string JoinPath(const std::string& base, const std::string& relative) {
  if (base.empty()) return relative;
  if (base.back() == '/') return base + relative;
  return base + "/" + relative;
}

// The path a file is reported under: "mount_path/relative"; a file mount's own path.
std::string ReportedPath(const FileMount& mount, const std::string& relative) {
  if (relative.empty()) return mount.mount_path;
  return JoinPath(mount.mount_path, relative);
}

// A file mount's file, opened without following a link and without blocking on a FIFO put
// there since it was validated.
constexpr int kFileOpenFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

// Why a file just opened for capture (`fd`; when not valid, `open_errno` says why) cannot be
// taken, or nothing, with `fst` filled in.
std::optional<std::string> CheckOpened(const UniqueFd& fd, int open_errno, struct stat& fst) {
  if (!fd) {
    if (open_errno == ELOOP) return "symlink not followed";
    if (open_errno == ENOENT) return "file disappeared during capture";
    return "file could not be opened: " + ErrnoText(open_errno);
  }
  if (::fstat(fd.get(), &fst) != 0) return "file could not be inspected: " + ErrnoText(errno);
  if (!S_ISREG(fst.st_mode)) return "not a regular file";
  return std::nullopt;
}

// FNV-1a, 64 bits: the snapshot's key of a host path, computed as the walk descends (each level
// continues its parent's hash), so that no full path is built for a file that did not change.
constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

std::uint64_t Fnv(std::uint64_t hash, std::string_view bytes) {
  for (const unsigned char c : bytes) {
    hash ^= c;
    hash *= kFnvPrime;
  }
  return hash;
}

// The snapshot's key of a file mount's file: its host path itself.
std::uint64_t HostPathHash(const std::string& host_path) { return Fnv(kFnvOffset, host_path); }

// The hash of "host_path/", as JoinPath(host_path, relative) begins.
std::uint64_t HostPathSeed(const std::string& host_path) {
  std::uint64_t hash = Fnv(kFnvOffset, host_path);
  if (!host_path.empty() && host_path.back() != '/') hash = Fnv(hash, "/");
  return hash;
}

enum class WalkEvent {
  kEntry,       // anything that is not a directory
  kTooDeep,     // a directory that was not entered
  kUnreadable,  // a directory that could not be opened
};

struct WalkItem {
  WalkEvent event;
  const std::string& relative;  // "a/b/c.txt"
  std::uint64_t path_hash;      // of the host path
  int dir_fd;                   // the directory holding it, opened beneath the mount
  const char* name;             // its name there
  const struct stat& st;        // from lstat (fstatat with AT_SYMLINK_NOFOLLOW)
};

// Reads the names of a directory, sorted as the paths below it sort: a directory's name with
// '/' appended, so that "a-b" (a file) comes before "a/x" and "a0" after it. Every name counts
// against `entries_left`; false when it ran out.
bool ListDirectory(DIR* dir, std::size_t& entries_left, std::vector<std::string>& keys) {
  bool complete = true;
  while (const dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    if (entries_left == 0) {
      complete = false;
      break;
    }
    --entries_left;
    bool is_dir = entry->d_type == DT_DIR;
    if (entry->d_type == DT_UNKNOWN) {
      struct stat st {};
      is_dir = ::fstatat(::dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    keys.emplace_back(name);
    if (is_dir) keys.back() += '/';
  }
  std::sort(keys.begin(), keys.end());
  return complete;
}

// Walks the tree under root_fd in path order without following symlinks, calling visit(WalkItem)
// for everything but the directories it enters. Holds at most max_scan_depth + 1 directory
// descriptors at once, with their names. `seed` is the hash of the mount's host path. True when
// max_scan_entries stopped the walk (the names read until then are still visited).
template <typename Visit>
bool Walk(int root_fd, std::uint64_t seed, const CaptureLimits& limits, Visit&& visit) {
  std::size_t entries_left =
      static_cast<std::size_t>(std::max<std::int64_t>(limits.max_scan_entries, 0));
  const std::size_t max_depth = static_cast<std::size_t>(std::max(limits.max_scan_depth, 0));
  bool limit_reached = false;
  struct Frame {
    UniqueDir dir;
    std::vector<std::string> keys;  // its names, sorted (ListDirectory)
    std::size_t next = 0;
    std::size_t prefix_size = 0;  // of `relative` for its entries: "" or "a/b/"
    std::uint64_t hash = 0;       // of the host path up to and including that prefix
  };
  std::vector<Frame> stack;
  auto enter = [&](int fd, std::size_t prefix_size, std::uint64_t hash) -> bool {
    UniqueDir dir(::fdopendir(fd));
    if (!dir) {
      ::close(fd);
      return false;
    }
    Frame frame{std::move(dir), {}, 0, prefix_size, hash};
    if (!ListDirectory(frame.dir.get(), entries_left, frame.keys)) limit_reached = true;
    stack.push_back(std::move(frame));
    return true;
  };
  const int first = ::openat(root_fd, ".", kDirOpenFlags);
  if (first < 0 || !enter(first, 0, seed)) return false;

  std::string relative;
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.next == frame.keys.size()) {
      stack.pop_back();
      continue;
    }
    std::string name = std::move(frame.keys[frame.next++]);  // freed as the walk goes
    if (name.back() == '/') name.pop_back();
    relative.resize(frame.prefix_size);
    relative += name;
    const std::uint64_t hash = Fnv(frame.hash, name);
    const int dir_fd = ::dirfd(frame.dir.get());
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // vanished
    if (!S_ISDIR(st.st_mode)) {
      visit(WalkItem{WalkEvent::kEntry, relative, hash, dir_fd, name.c_str(), st});
      continue;
    }
    if (stack.size() > max_depth) {
      visit(WalkItem{WalkEvent::kTooDeep, relative, hash, dir_fd, name.c_str(), st});
      continue;
    }
    const int child_fd = ::openat(dir_fd, name.c_str(), kDirOpenFlags);
    if (child_fd < 0) {
      if (errno == EACCES || errno == EPERM) {
        visit(WalkItem{WalkEvent::kUnreadable, relative, hash, dir_fd, name.c_str(), st});
      }
      continue;  // otherwise swapped for a link or removed since the fstatat
    }
    struct stat opened {};
    if (::fstat(child_fd, &opened) != 0 || !SameFile(opened, st)) {
      ::close(child_fd);
      continue;
    }
    enter(child_fd, relative.size() + 1, Fnv(hash, "/"));  // `frame` is not used after this
    relative += '/';
  }
  return limit_reached;
}

UniqueFd OpenMountRoot(const FileMount& mount) {
  return UniqueFd(::open(mount.host_path.c_str(), kDirOpenFlags));
}

// The real path of an open descriptor, or "" where /proc is unavailable or the path is longer
// than PATH_MAX.
std::string RealPathOfFd(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::array<char, PATH_MAX + 1> buffer{};
  const ssize_t n = ::readlink(link.c_str(), buffer.data(), buffer.size() - 1);
  if (n <= 0 || static_cast<std::size_t>(n) >= buffer.size() - 1) return std::string();
  return std::string(buffer.data(), static_cast<std::size_t>(n));
}

bool IsBeneath(const std::string& path, const std::string& root) {
  if (root == "/") return path.size() > 1 && path.front() == '/';
  return path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
         path[root.size()] == '/';
}

// Reads at most max_bytes, however much the file grows meanwhile.
bool ReadCapped(int fd, std::int64_t max_bytes, std::string& out, int& error) {
  out.clear();
  out.resize(static_cast<std::size_t>(max_bytes));
  std::size_t filled = 0;
  while (filled < out.size()) {
    const ssize_t n = ::read(fd, out.data() + filled, out.size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      return false;
    }
    if (n == 0) break;
    filled += static_cast<std::size_t>(n);
  }
  out.resize(filled);
  return true;
}

std::string BytesReason(std::string_view what, std::int64_t limit) {
  return std::string(what) + " of " + std::to_string(limit) + " bytes reached";
}

// One capture: the budgets of the run, the files taken and the omissions, filled mount by mount
// as the walk meets each file in path order.
class CaptureRun {
 public:
  CaptureRun(const MountSnapshot& before, const CaptureLimits& limits)
      : before_(before), limits_(limits), omissions_(limits.max_listed_omissions) {}

  void ScanMount(const FileMount& mount) {
    if (mount.kind == MountKind::kFile) return ScanFileMount(mount);
    const UniqueFd root = OpenMountRoot(mount);
    if (!root) {
      const int err = errno;
      omissions_.List({mount.mount_path, "mount directory could not be opened: " + ErrnoText(err)});
      return;
    }
    std::string root_real = RealPathOfFd(root.get());
    if (root_real.empty()) {
      char resolved[PATH_MAX];
      if (::realpath(mount.host_path.c_str(), resolved) != nullptr) root_real = resolved;
    }
    std::int64_t mount_bytes = 0;
    const bool stopped =
        Walk(root.get(), HostPathSeed(mount.host_path), limits_, [&](const WalkItem& item) {
          switch (item.event) {
            case WalkEvent::kTooDeep:
              Omit(mount, item.relative,
                   "directory nested deeper than " + std::to_string(limits_.max_scan_depth) +
                       " levels not scanned");
              return;
            case WalkEvent::kUnreadable:
              if (before_.Contains(item.path_hash, StampOf(item.st))) return;
              Omit(mount, item.relative, "directory could not be opened: Permission denied");
              return;
            case WalkEvent::kEntry:
              if (before_.Contains(item.path_hash, StampOf(item.st))) return;
              Consider(mount, root_real, item, mount_bytes);
              return;
          }
        });
    if (stopped) {
      omissions_.List(
          {mount.mount_path,
           "scan stopped after " + std::to_string(limits_.max_scan_entries) + " entries"});
    }
  }

  Capture Finish() {
    Capture capture;
    capture.files = std::move(files_);
    // In path order already, but for mount paths nested in one another.
    std::stable_sort(capture.files.begin(), capture.files.end(),
                     [](const CapturedFile& a, const CapturedFile& b) { return a.path < b.path; });
    capture.omitted = omissions_.Take();
    return capture;
  }

 private:
  // Listed while the list and the JSON budget have room, else counted in the mount's summary.
  void Omit(const FileMount& mount, const std::string& relative, std::string reason) {
    if (!omissions_.full()) {
      OmittedFile entry{ReportedPath(mount, relative), std::move(reason)};
      const std::size_t bytes = OmittedFileJsonBytes(entry) + 1;  // and a comma
      if (json_bytes_ + bytes <= MaxJsonBytes()) {
        json_bytes_ += bytes;
        omissions_.List(std::move(entry));
        return;
      }
      reason = std::move(entry.reason);
    }
    omissions_.Count(mount.mount_path, reason);
  }

  std::size_t MaxJsonBytes() const {
    return static_cast<std::size_t>(std::max<std::int64_t>(limits_.max_json_bytes, 0));
  }

  void Consider(const FileMount& mount, const std::string& root_real, const WalkItem& item,
                std::int64_t& mount_bytes) {
    auto omit = [&](std::string reason) { Omit(mount, item.relative, std::move(reason)); };
    const struct stat& st = item.st;
    if (S_ISLNK(st.st_mode)) return omit("symlink not followed");
    if (!S_ISREG(st.st_mode)) return omit("not a regular file");
    if (st.st_nlink > 1) return omit("hardlink (st_nlink > 1) skipped");
    if (static_cast<std::int64_t>(files_.size()) >= limits_.max_files) {
      return omit("captured file limit of " + std::to_string(limits_.max_files) + " files reached");
    }

    // O_NONBLOCK: should a fifo appear here after the lstat, opening it must not block. The
    // directory was opened beneath the mount without following links, so this is the file the
    // walk saw, or a link (refused) or something else (checked below) put there since.
    const UniqueFd fd(::openat(item.dir_fd, item.name, kFileOpenFlags));
    struct stat fst {};
    if (auto why = CheckOpened(fd, errno, fst)) return omit(std::move(*why));
    if (!SameFile(fst, st)) return omit("file replaced during capture");
    if (fst.st_nlink > 1) return omit("hardlink (st_nlink > 1) skipped");
    // A directory moved out of the mount while the walk held it.
    if (const std::string real = RealPathOfFd(fd.get());
        !real.empty() && !root_real.empty() && !IsBeneath(real, root_real)) {
      return omit("path leaves the mount");
    }

    Take(mount, item.relative, fd.get(), fst, mount_bytes);
  }

  // A file mount: its one file, when it changed, under the mount path itself. The host named
  // this inode and the code cannot make the mount point name another, so the hardlink rule of a
  // directory's walk (a link the code planted to a file it should not return) does not apply.
  void ScanFileMount(const FileMount& mount) {
    auto omit = [&](std::string reason) { Omit(mount, "", std::move(reason)); };
    const UniqueFd fd(::open(mount.host_path.c_str(), kFileOpenFlags));
    struct stat fst {};
    if (auto why = CheckOpened(fd, errno, fst)) return omit(std::move(*why));
    if (before_.Contains(HostPathHash(mount.host_path), StampOf(fst))) return;
    // A directory above it swapped for a link to elsewhere (a process-level run as the host's
    // own user without Landlock could): not the mounted file.
    if (const std::string real = RealPathOfFd(fd.get()); !real.empty() && real != mount.host_path) {
      return omit("path leaves the mount");
    }
    if (static_cast<std::int64_t>(files_.size()) >= limits_.max_files) {
      return omit("captured file limit of " + std::to_string(limits_.max_files) + " files reached");
    }
    std::int64_t mount_bytes = 0;
    Take(mount, "", fd.get(), fst, mount_bytes);
  }

  // Reads an open regular file into the capture, within the limits, or omits it.
  void Take(const FileMount& mount, const std::string& relative, int fd, const struct stat& fst,
            std::int64_t& mount_bytes) {
    auto omit = [&](std::string reason) { Omit(mount, relative, std::move(reason)); };
    const std::int64_t size = static_cast<std::int64_t>(fst.st_size);
    if (size > limits_.max_file_bytes) {
      return omit("file of " + std::to_string(size) + " bytes exceeds the per-file limit of " +
                  std::to_string(limits_.max_file_bytes) + " bytes");
    }
    if (mount_bytes + size > mount.write_bytes_limit)
      return omit(BytesReason("mount write limit", mount.write_bytes_limit));
    if (total_bytes_ + size > limits_.max_total_bytes) {
      return omit(BytesReason("total capture limit", limits_.max_total_bytes));
    }
    CapturedFile file;
    file.path = ReportedPath(mount, relative);
    file.media_type = MediaTypeForPath(file.path);
    const std::size_t json_bytes =
        CapturedFileJsonBytes(file.path, file.media_type, size, static_cast<std::size_t>(size)) + 1;
    if (json_bytes_ + json_bytes > MaxJsonBytes())
      return omit(BytesReason("result size limit", limits_.max_json_bytes));

    int read_error = 0;
    if (!ReadCapped(fd, size, file.data, read_error))
      return omit("file could not be read: " + ErrnoText(read_error));
    file.size = static_cast<std::int64_t>(file.data.size());
    mount_bytes += file.size;
    total_bytes_ += file.size;
    json_bytes_ += json_bytes;
    files_.push_back(std::move(file));
  }

  const MountSnapshot& before_;
  const CaptureLimits& limits_;
  std::vector<CapturedFile> files_;
  OmissionList omissions_;
  std::int64_t total_bytes_ = 0;
  std::size_t json_bytes_ = 0;  // what files_ and the listed omissions add to the result JSON
};

}  // namespace

CaptureLimits CaptureLimitsFor(const ExecutionLimits& limits) {
  CaptureLimits capture;
  capture.max_file_bytes = limits.max_capture_file_bytes;
  capture.max_total_bytes = limits.max_capture_total_bytes;
  capture.max_files = limits.max_capture_files;
  capture.max_json_bytes = limits.max_result_bytes;
  return capture;
}

MountSnapshot MountSnapshot::Take(const std::vector<FileMount>& mounts) {
  return Take(mounts, CaptureLimits());
}

MountSnapshot MountSnapshot::Take(const std::vector<FileMount>& mounts,
                                  const CaptureLimits& limits) {
  MountSnapshot snapshot;
  for (const FileMount& mount : mounts) {
    if (mount.mode != MountMode::kReadWrite) continue;
    if (mount.kind == MountKind::kFile) {
      struct stat st {};
      if (::lstat(mount.host_path.c_str(), &st) == 0)
        snapshot.stamps_.emplace_back(HostPathHash(mount.host_path), StampOf(st));
      continue;
    }
    const UniqueFd root = OpenMountRoot(mount);
    if (!root) continue;
    // Links, special files and unreadable directories are recorded too, so that ones that were
    // already there before the run are not reported as omitted after every run.
    Walk(root.get(), HostPathSeed(mount.host_path), limits, [&](const WalkItem& item) {
      if (item.event == WalkEvent::kTooDeep) return;
      snapshot.stamps_.emplace_back(item.path_hash, StampOf(item.st));
    });
  }
  std::sort(snapshot.stamps_.begin(), snapshot.stamps_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return snapshot;
}

const FileStamp* MountSnapshot::Find(std::string_view host_path) const {
  const std::uint64_t hash = Fnv(kFnvOffset, host_path);
  const auto it =
      std::lower_bound(stamps_.begin(), stamps_.end(), hash,
                       [](const auto& entry, std::uint64_t h) { return entry.first < h; });
  return it != stamps_.end() && it->first == hash ? &it->second : nullptr;
}

bool MountSnapshot::Contains(std::uint64_t path_hash, const FileStamp& stamp) const {
  auto it = std::lower_bound(stamps_.begin(), stamps_.end(), path_hash,
                             [](const auto& entry, std::uint64_t h) { return entry.first < h; });
  for (; it != stamps_.end() && it->first == path_hash; ++it) {
    if (it->second == stamp) return true;
  }
  return false;
}

void OmissionList::Count(std::string_view mount_path, std::string_view reason) {
  constexpr std::size_t kReasonsShown = 3;
  auto it = std::find_if(summaries_.begin(), summaries_.end(),
                         [&](const Summary& s) { return s.mount_path == mount_path; });
  if (it == summaries_.end()) {
    summaries_.push_back({std::string(mount_path), 0, {}, false});
    it = summaries_.end() - 1;
  }
  ++it->count;
  constexpr std::size_t kLongestReason = 200;  // the capture's are shorter; others are cut
  reason = reason.substr(0, kLongestReason);
  if (std::find(it->reasons.begin(), it->reasons.end(), reason) != it->reasons.end()) return;
  if (it->reasons.size() < kReasonsShown) {
    it->reasons.emplace_back(reason);
  } else {
    it->more_reasons = true;
  }
}

std::vector<OmittedFile> OmissionList::Take() {
  std::vector<OmittedFile> out = std::move(listed_);
  for (const Summary& s : summaries_)
    out.push_back(OmissionSummary(s.mount_path, s.count, s.reasons, s.more_reasons));
  std::stable_sort(out.begin(), out.end(),
                   [](const OmittedFile& a, const OmittedFile& b) { return a.path < b.path; });
  listed_.clear();
  summaries_.clear();
  return out;
}

OmittedFile OmissionSummary(std::string_view mount_path, std::int64_t count,
                            const std::vector<std::string>& reasons, bool more_reasons) {
  std::string reason =
      "and " + std::to_string(count) + " more " + (count == 1 ? "file" : "files") + " omitted: ";
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    if (i > 0) reason += "; ";
    reason += reasons[i];
  }
  if (more_reasons) reason += "; and other reasons";
  return {JoinPath(std::string(mount_path), "\u2026"), std::move(reason)};
}

Capture CaptureChanges(const MountSnapshot& before, const std::vector<FileMount>& mounts,
                       const CaptureLimits& limits) {
  // Mounts in the order their files' paths sort: "/data" + "/" after "/data-x/".
  std::vector<const FileMount*> order;
  for (const FileMount& mount : mounts) {
    if (mount.mode == MountMode::kReadWrite) order.push_back(&mount);
  }
  std::stable_sort(order.begin(), order.end(), [](const FileMount* a, const FileMount* b) {
    return JoinPath(a->mount_path, "") < JoinPath(b->mount_path, "");
  });
  CaptureRun run(before, limits);
  for (const FileMount* mount : order) run.ScanMount(*mount);
  return run.Finish();
}

namespace {

// Media types by lower-case file extension, sorted by extension.
constexpr std::pair<std::string_view, std::string_view> kMediaTypes[] = {
    {"7z", "application/x-7z-compressed"},
    {"arrow", "application/vnd.apache.arrow.file"},
    {"bmp", "image/bmp"},
    {"bz2", "application/x-bzip2"},
    {"c", "text/x-c"},
    {"cfg", "text/plain"},
    {"cpp", "text/x-c++"},
    {"css", "text/css"},
    {"csv", "text/csv"},
    {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"feather", "application/vnd.apache.arrow.file"},
    {"gif", "image/gif"},
    {"go", "text/x-go"},
    {"gz", "application/gzip"},
    {"h", "text/x-c"},
    {"hpp", "text/x-c++"},
    {"htm", "text/html"},
    {"html", "text/html"},
    {"ico", "image/vnd.microsoft.icon"},
    {"ini", "text/plain"},
    {"ipynb", "application/x-ipynb+json"},
    {"java", "text/x-java"},
    {"jpeg", "image/jpeg"},
    {"jpg", "image/jpeg"},
    {"js", "text/javascript"},
    {"json", "application/json"},
    {"jsonl", "application/jsonl"},
    {"log", "text/plain"},
    {"md", "text/markdown"},
    {"mjs", "text/javascript"},
    {"mp3", "audio/mpeg"},
    {"mp4", "video/mp4"},
    {"ndjson", "application/x-ndjson"},
    {"npy", "application/x-npy"},
    {"npz", "application/zip"},
    {"ogg", "audio/ogg"},
    {"parquet", "application/vnd.apache.parquet"},
    {"pdf", "application/pdf"},
    {"png", "image/png"},
    {"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    {"py", "text/x-python"},
    {"rs", "text/x-rust"},
    {"rst", "text/x-rst"},
    {"sh", "application/x-sh"},
    {"sql", "application/sql"},
    {"svg", "image/svg+xml"},
    {"tar", "application/x-tar"},
    {"tgz", "application/gzip"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"toml", "application/toml"},
    {"tsv", "text/tab-separated-values"},
    {"txt", "text/plain"},
    {"wasm", "application/wasm"},
    {"wav", "audio/wav"},
    {"webm", "video/webm"},
    {"webp", "image/webp"},
    {"xls", "application/vnd.ms-excel"},
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"xml", "application/xml"},
    {"xz", "application/x-xz"},
    {"yaml", "application/yaml"},
    {"yml", "application/yaml"},
    {"zip", "application/zip"},
    {"zst", "application/zstd"},
};
constexpr std::string_view kDefaultMediaType = "application/octet-stream";

// The lower-case extension of the path's last component; empty when it has none (no dot, or
// only a leading one, as in ".bashrc").
std::string ExtensionOf(const std::string& path) {
  const std::size_t slash = path.find_last_of("/\\");
  const std::string_view name =
      std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return "";
  std::string extension(name.substr(dot + 1));
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension;
}

}  // namespace

std::string MediaTypeForPath(const std::string& path) {
  const std::string extension = ExtensionOf(path);
  if (extension.empty()) return std::string(kDefaultMediaType);
  for (const auto& [ext, type] : kMediaTypes) {
    if (ext == extension) return std::string(type);
  }
  return std::string(kDefaultMediaType);
}

}  // namespace codeact::internal
