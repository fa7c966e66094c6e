// FileMount validation: mount-path normalisation and host-path checks.
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

#include "process/posix_util.hpp"

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
                           " is a symlink; name the real directory");
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument("mount host path " + Quoted(absolute) + " is not a directory");
  }

  // Store the real path so later containment checks compare real paths with real paths.
  char resolved[PATH_MAX];
  if (::realpath(absolute.c_str(), resolved) == nullptr) {
    return FailedPrecondition("mount host path " + Quoted(absolute) +
                              " cannot be resolved: " + ErrnoText(errno));
  }
  struct stat real_st {};
  if (::lstat(resolved, &real_st) != 0 || !S_ISDIR(real_st.st_mode) ||
      real_st.st_dev != st.st_dev || real_st.st_ino != st.st_ino) {
    return FailedPrecondition("mount host path " + Quoted(absolute) +
                              " changed while it was being checked");
  }
  mount.host_path = resolved;
  return mount;
}

std::string_view MountModeName(MountMode mode) {
  switch (mode) {
    case MountMode::kReadWrite:
      return "rw";
    case MountMode::kReadOnly:
      return "ro";
  }
  return "unknown";
}

}  // namespace codeact
