// FileMount validation: mount-path normalisation, host-path checks and the layout of a set.
#include "codeact/file_mount.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "common/names.hpp"
#include "os/errno_status.hpp"
#include "os/path_within.hpp"

namespace codeact {
namespace {

using internal::ErrnoText;

// Longer mount paths than this are rejected; PATH_MAX is the kernel's own bound.
constexpr std::size_t kMaxMountPathBytes = PATH_MAX;

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  out.append(s);
  out += '"';
  return out;
}

std::string FileTypeName(const struct stat& st) {
  if (S_ISFIFO(st.st_mode)) return "FIFO";
  if (S_ISSOCK(st.st_mode)) return "socket";
  if (S_ISCHR(st.st_mode)) return "character device";
  if (S_ISBLK(st.st_mode)) return "block device";
  return "special file";
}

}  // namespace

StatusOr<std::string> NormaliseMountPath(std::string_view path) {
  if (path.empty()) return InvalidArgument("mount path is empty");
  if (path.size() > kMaxMountPathBytes) {
    return InvalidArgument("mount path is longer than " + std::to_string(kMaxMountPathBytes) +
                           " bytes");
  }
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u == 0) return InvalidArgument("mount path contains a NUL byte");
    if (u < 0x20 || u == 0x7f) {
      return InvalidArgument("mount path " + Quoted(path) + " contains a control character");
    }
  }

  std::string converted(path);
  std::replace(converted.begin(), converted.end(), '\\', '/');
  const std::string_view view(converted);
  std::vector<std::string_view> segments;
  std::size_t start = 0;
  while (start <= view.size()) {
    std::size_t end = view.find('/', start);
    if (end == std::string_view::npos) end = view.size();
    const std::string_view segment = view.substr(start, end - start);
    if (segment == "..") {
      return InvalidArgument("mount path " + Quoted(path) + " contains \"..\"");
    }
    if (!segment.empty() && segment != ".") segments.push_back(segment);
    start = end + 1;
  }
  if (segments.empty()) {
    return InvalidArgument("mount path " + Quoted(path) +
                           " names the root; mount at a directory such as /data");
  }

  std::string out;
  for (std::string_view segment : segments) {
    out += '/';
    out.append(segment);
  }
  return out;
}

StatusOr<FileMount> ValidateMount(FileMount mount) {
  StatusOr<std::string> mount_path = NormaliseMountPath(mount.mount_path);
  if (!mount_path.ok()) return mount_path.status();
  mount.mount_path = std::move(mount_path).value();

  if (mount.write_bytes_limit <= 0) {
    return InvalidArgument("mount " + mount.mount_path + ": write_bytes_limit must be > 0, got " +
                           std::to_string(mount.write_bytes_limit));
  }
  if (mount.disk_bytes_limit <= 0 || mount.disk_files_limit <= 0) {
    return InvalidArgument(
        "mount " + mount.mount_path + ": disk_bytes_limit and disk_files_limit must be > 0, got " +
        std::to_string(mount.disk_bytes_limit) + " and " + std::to_string(mount.disk_files_limit));
  }
  if (mount.host_path.empty()) {
    return InvalidArgument("mount " + mount.mount_path + ": host path is empty");
  }
  if (mount.host_path.find('\0') != std::string::npos) {
    return InvalidArgument("mount " + mount.mount_path + ": host path contains a NUL byte");
  }

  // Absolute but not resolved: the symlink check must see the path the caller named.
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(mount.host_path, ec).string();
  if (ec) {
    return InvalidArgument("mount host path " + Quoted(mount.host_path) +
                           " cannot be made absolute: " + ec.message());
  }
  // A trailing "/" would make lstat follow a symlink in the last component.
  const bool trailing_slash = absolute.size() > 1 && absolute.back() == '/';
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();

  struct stat st {};
  if (::lstat(absolute.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return NotFound("mount host path " + Quoted(absolute) + " does not exist");
    }
    if (err == EACCES) {
      return PermissionDenied("mount host path " + Quoted(absolute) +
                              " cannot be inspected: " + ErrnoText(err));
    }
    return FailedPrecondition("mount host path " + Quoted(absolute) +
                              " cannot be inspected: " + ErrnoText(err));
  }
  if (S_ISLNK(st.st_mode)) {
    return InvalidArgument("mount host path " + Quoted(absolute) +
                           " is a symlink; name the real directory or file");
  }
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
    return InvalidArgument("mount host path " + Quoted(absolute) + " is a " + FileTypeName(st) +
                           ", not a directory or a regular file");
  }
  const bool is_file = S_ISREG(st.st_mode);
  if (is_file && trailing_slash) {
    return InvalidArgument("mount host path " + Quoted(mount.host_path) +
                           " ends in \"/\" but names a file, not a directory");
  }

  // Store the real path so later containment checks compare real paths with real paths.
  char resolved[PATH_MAX];
  if (::realpath(absolute.c_str(), resolved) == nullptr) {
    return FailedPrecondition("mount host path " + Quoted(absolute) +
                              " cannot be resolved: " + ErrnoText(errno));
  }
  struct stat real_st {};
  if (::lstat(resolved, &real_st) != 0 || (real_st.st_mode & S_IFMT) != (st.st_mode & S_IFMT) ||
      real_st.st_dev != st.st_dev || real_st.st_ino != st.st_ino) {
    return FailedPrecondition("mount host path " + Quoted(absolute) +
                              " changed while it was being checked");
  }
  mount.host_path = resolved;
  mount.kind = is_file ? MountKind::kFile : MountKind::kDirectory;
  return mount;
}

Status CheckMountLayout(const std::vector<FileMount>& mounts) {
  for (const FileMount& a : mounts) {
    for (const FileMount& b : mounts) {
      if (&a == &b) continue;
      if (&a < &b && a.mount_path == b.mount_path) {
        return InvalidArgument("two mounts at " + a.mount_path);
      }
      if (a.kind != MountKind::kFile || a.mount_path == b.mount_path) continue;
      if (internal::PathWithin(b.mount_path, a.mount_path)) {
        return InvalidArgument("mount path " + b.mount_path + " is beneath the file mount " +
                               a.mount_path + ": a file holds no entries");
      }
      if (internal::PathWithin(a.mount_path, b.mount_path)) {
        return InvalidArgument("file mount " + a.mount_path + " is beneath the mount " +
                               b.mount_path + ": its mount point would have to be made in " +
                               b.host_path + "; mount the file elsewhere");
      }
    }
  }
  for (const FileMount& a : mounts) {
    if (a.kind != MountKind::kFile || a.mode != MountMode::kReadOnly) continue;
    for (const FileMount& b : mounts) {
      if (b.mode == MountMode::kReadWrite && internal::PathWithin(a.host_path, b.host_path)) {
        return InvalidArgument("read-only file mount " + a.mount_path + " (" + a.host_path +
                               ") is writable through the read-write mount " + b.mount_path);
      }
    }
  }
  return Status::Ok();
}

std::string_view MountKindName(MountKind kind) { return internal::kMountKindNames.Name(kind); }

std::string_view MountModeName(MountMode mode) { return internal::kMountModeNames.Name(mode); }

}  // namespace codeact
