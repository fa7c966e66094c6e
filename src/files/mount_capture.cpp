// Mount snapshot and capture (DESIGN 4.6). The walk never follows a symlink: every directory is
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
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace codeact::internal {
namespace {

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

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

// The key of a file in a MountSnapshot.
std::string HostKey(const FileMount& mount, const std::string& relative) {
  return JoinPath(mount.host_path, relative);
}

// The path a file is reported under: "mount_path/relative".
std::string ReportedPath(const FileMount& mount, const std::string& relative) {
  return JoinPath(mount.mount_path, relative);
}

struct WalkEntry {
  std::string relative;  // "a/b/c.txt"
  struct stat st;        // from lstat (fstatat with AT_SYMLINK_NOFOLLOW)
};

struct WalkResult {
  std::vector<WalkEntry> entries;     // everything that is not a directory
  std::vector<std::string> too_deep;  // directories that were not entered
  std::vector<WalkEntry> unreadable;  // directories that could not be opened
  bool entry_limit_reached = false;
};

// Walks the tree under root_fd without following symlinks. Holds at most max_scan_depth + 1
// directory descriptors at once.
WalkResult Walk(int root_fd, const CaptureLimits& limits) {
  const std::size_t max_entries =
      static_cast<std::size_t>(std::max<std::int64_t>(limits.max_scan_entries, 0));
  const std::size_t max_depth = static_cast<std::size_t>(std::max(limits.max_scan_depth, 0));
  WalkResult result;
  struct Frame {
    UniqueDir dir;
    std::string prefix;  // relative path of this directory, "" for the root
  };
  std::vector<Frame> stack;
  const int first = ::openat(root_fd, ".", kDirOpenFlags);
  if (first < 0) return result;
  UniqueDir root_dir(::fdopendir(first));
  if (!root_dir) {
    ::close(first);
    return result;
  }
  stack.push_back({std::move(root_dir), std::string()});

  std::size_t seen = 0;
  while (!stack.empty()) {
    DIR* dir = stack.back().dir.get();
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      stack.pop_back();
      continue;
    }
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    if (++seen > max_entries) {
      result.entry_limit_reached = true;
      break;
    }
    const int dir_fd = ::dirfd(dir);
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // vanished
    const std::string& prefix = stack.back().prefix;
    std::string relative = prefix.empty() ? std::string(name) : prefix + "/" + name;
    if (!S_ISDIR(st.st_mode)) {
      result.entries.push_back({std::move(relative), st});
      continue;
    }
    if (stack.size() > max_depth) {
      result.too_deep.push_back(std::move(relative));
      continue;
    }
    const int child_fd = ::openat(dir_fd, name, kDirOpenFlags);
    if (child_fd < 0) {
      if (errno == EACCES || errno == EPERM) {
        result.unreadable.push_back({std::move(relative), st});
      }
      continue;  // otherwise swapped for a link or removed since the fstatat
    }
    struct stat opened {};
    if (::fstat(child_fd, &opened) != 0 || !SameFile(opened, st)) {
      ::close(child_fd);
      continue;
    }
    UniqueDir child(::fdopendir(child_fd));
    if (!child) {
      ::close(child_fd);
      continue;
    }
    stack.push_back({std::move(child), std::move(relative)});
  }
  return result;
}

UniqueFd OpenMountRoot(const FileMount& mount) {
  return UniqueFd(::open(mount.host_path.c_str(), kDirOpenFlags));
}

// The real path of an open descriptor, or "" where /proc is unavailable.
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

// Opens `relative` below root_fd one component at a time, never following a symlink.
struct OpenResult {
  UniqueFd fd;
  int error = 0;
  bool failed_in_directory = false;  // an intermediate component, not the file itself
};

OpenResult OpenBeneath(int root_fd, const std::string& relative) {
  OpenResult result;
  UniqueFd current(::openat(root_fd, ".", kDirOpenFlags));
  if (!current.valid()) {
    result.error = errno;
    result.failed_in_directory = true;
    return result;
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = relative.find('/', start);
    if (slash == std::string::npos) break;
    const std::string component = relative.substr(start, slash - start);
    UniqueFd next(::openat(current.get(), component.c_str(), kDirOpenFlags));
    if (!next.valid()) {
      result.error = errno;
      result.failed_in_directory = true;
      return result;
    }
    current = std::move(next);
    start = slash + 1;
  }
  const std::string last = relative.substr(start);
  // O_NONBLOCK: should a fifo appear here after the lstat, opening it must not block.
  result.fd = UniqueFd(::openat(current.get(), last.c_str(),
                                O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!result.fd.valid()) result.error = errno;
  return result;
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

struct Candidate {
  std::string path;  // reported path
  std::size_t mount_index = 0;
  std::string relative;
  struct stat st {};
};

struct MountState {
  UniqueFd root;
  std::string root_real;  // the real path of the root, for the containment check
  std::int64_t captured_bytes = 0;
};

}  // namespace

MountSnapshot MountSnapshot::Take(const std::vector<FileMount>& mounts) {
  return Take(mounts, CaptureLimits());
}

MountSnapshot MountSnapshot::Take(const std::vector<FileMount>& mounts,
                                  const CaptureLimits& limits) {
  MountSnapshot snapshot;
  for (const FileMount& mount : mounts) {
    if (mount.mode != MountMode::kReadWrite) continue;
    const UniqueFd root = OpenMountRoot(mount);
    if (!root.valid()) continue;
    // Links, special files and unreadable directories are recorded too, so that ones that were
    // already there before the run are not reported as omitted after every run.
    const WalkResult walk = Walk(root.get(), limits);
    for (const WalkEntry& entry : walk.entries) {
      snapshot.files_[HostKey(mount, entry.relative)] = StampOf(entry.st);
    }
    for (const WalkEntry& entry : walk.unreadable) {
      snapshot.files_[HostKey(mount, entry.relative)] = StampOf(entry.st);
    }
  }
  return snapshot;
}

Capture CaptureChanges(const MountSnapshot& before, const std::vector<FileMount>& mounts,
                       const CaptureLimits& limits) {
  Capture capture;
  std::vector<MountState> states(mounts.size());
  std::vector<Candidate> candidates;

  for (std::size_t i = 0; i < mounts.size(); ++i) {
    const FileMount& mount = mounts[i];
    if (mount.mode != MountMode::kReadWrite) continue;
    MountState& state = states[i];
    state.root = OpenMountRoot(mount);
    if (!state.root.valid()) {
      const int err = errno;
      capture.omitted.push_back(
          {mount.mount_path, "mount directory could not be opened: " + ErrnoText(err)});
      continue;
    }
    state.root_real = RealPathOfFd(state.root.get());
    if (state.root_real.empty()) {
      char resolved[PATH_MAX];
      if (::realpath(mount.host_path.c_str(), resolved) != nullptr) state.root_real = resolved;
    }

    WalkResult walk = Walk(state.root.get(), limits);
    for (const std::string& relative : walk.too_deep) {
      capture.omitted.push_back(
          {ReportedPath(mount, relative), "directory nested deeper than " +
                                              std::to_string(limits.max_scan_depth) +
                                              " levels not scanned"});
    }
    if (walk.entry_limit_reached) {
      capture.omitted.push_back(
          {mount.mount_path,
           "scan stopped after " + std::to_string(limits.max_scan_entries) + " entries"});
    }
    for (const WalkEntry& entry : walk.unreadable) {
      const auto it = before.files().find(HostKey(mount, entry.relative));
      if (it != before.files().end() && it->second == StampOf(entry.st)) continue;
      capture.omitted.push_back({ReportedPath(mount, entry.relative),
                                 "directory could not be opened: Permission denied"});
    }
    for (WalkEntry& entry : walk.entries) {
      const auto it = before.files().find(HostKey(mount, entry.relative));
      if (it != before.files().end() && it->second == StampOf(entry.st)) continue;
      candidates.push_back(
          {ReportedPath(mount, entry.relative), i, std::move(entry.relative), entry.st});
    }
  }

  // Sorted first, so that which files fit the per-mount and total budgets is deterministic.
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.path < b.path; });

  std::int64_t total_bytes = 0;
  for (const Candidate& candidate : candidates) {
    const FileMount& mount = mounts[candidate.mount_index];
    MountState& state = states[candidate.mount_index];
    auto omit = [&](std::string reason) {
      capture.omitted.push_back({candidate.path, std::move(reason)});
    };
    const struct stat& st = candidate.st;
    if (S_ISLNK(st.st_mode)) {
      omit("symlink not followed");
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      omit("not a regular file");
      continue;
    }
    if (st.st_nlink > 1) {
      omit("hardlink (st_nlink > 1) skipped");
      continue;
    }

    OpenResult opened = OpenBeneath(state.root.get(), candidate.relative);
    if (!opened.fd.valid()) {
      if (opened.error == ELOOP || (opened.failed_in_directory && opened.error == ENOTDIR)) {
        omit(opened.failed_in_directory ? "path leaves the mount" : "symlink not followed");
      } else if (opened.error == ENOENT) {
        omit("file disappeared during capture");
      } else {
        omit("file could not be opened: " + ErrnoText(opened.error));
      }
      continue;
    }
    struct stat fst {};
    if (::fstat(opened.fd.get(), &fst) != 0) {
      omit("file could not be inspected: " + ErrnoText(errno));
      continue;
    }
    if (!S_ISREG(fst.st_mode)) {
      omit("not a regular file");
      continue;
    }
    if (!SameFile(fst, st)) {
      omit("file replaced during capture");
      continue;
    }
    if (fst.st_nlink > 1) {
      omit("hardlink (st_nlink > 1) skipped");
      continue;
    }
    if (const std::string real = RealPathOfFd(opened.fd.get());
        !real.empty() && !state.root_real.empty() && !IsBeneath(real, state.root_real)) {
      omit("path leaves the mount");
      continue;
    }

    const std::int64_t size = static_cast<std::int64_t>(fst.st_size);
    if (size > limits.max_file_bytes) {
      omit("file of " + std::to_string(size) + " bytes exceeds the per-file limit of " +
           std::to_string(limits.max_file_bytes) + " bytes");
      continue;
    }
    if (state.captured_bytes + size > mount.write_bytes_limit) {
      omit(BytesReason("mount write limit", mount.write_bytes_limit));
      continue;
    }
    if (total_bytes + size > limits.max_total_bytes) {
      omit(BytesReason("total capture limit", limits.max_total_bytes));
      continue;
    }

    CapturedFile file;
    int read_error = 0;
    if (!ReadCapped(opened.fd.get(), size, file.data, read_error)) {
      omit("file could not be read: " + ErrnoText(read_error));
      continue;
    }
    file.path = candidate.path;
    file.media_type = MediaTypeForPath(candidate.path);
    file.size = static_cast<std::int64_t>(file.data.size());
    state.captured_bytes += file.size;
    total_bytes += file.size;
    capture.files.push_back(std::move(file));
  }

  std::stable_sort(capture.omitted.begin(), capture.omitted.end(),
                   [](const OmittedFile& a, const OmittedFile& b) { return a.path < b.path; });
  return capture;
}

std::string MediaTypeForPath(const std::string& path) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
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
  constexpr std::string_view kDefault = "application/octet-stream";

  const std::size_t slash = path.find_last_of("/\\");
  const std::string_view name =
      std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  const std::size_t dot = name.rfind('.');
  // No dot, or only a leading one (".bashrc"): no extension.
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) {
    return std::string(kDefault);
  }
  std::string extension(name.substr(dot + 1));
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [ext, type] : kTypes) {
    if (ext == extension) return std::string(type);
  }
  return std::string(kDefault);
}

}  // namespace codeact::internal
