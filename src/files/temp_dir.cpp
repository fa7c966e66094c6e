// TempDir and RemoveTree: per-run private directories and their removal without following links.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "files/mount_capture.hpp"
#include "files/scratch_owner.hpp"
#include "os/errno_status.hpp"

namespace codeact::internal {
namespace {

// Open directories held at once while removing; deeper subtrees are hoisted (renamed) to the
// root and removed by a later pass, so any depth is removed with a bounded number of fds.
constexpr std::size_t kMaxOpenDepth = 64;
// A pass that removes nothing ends the attempt; this bounds even a tree that keeps changing.
constexpr int kMaxPasses = 100000;

// The code may have chmod'ed a directory to 000 to break cleanup; the owner can always undo it.
void EnsureOwnerRwx(int parent_fd, const char* name, const struct stat& st) {
  if ((st.st_mode & S_IRWXU) == S_IRWXU) return;
  const mode_t mode = (st.st_mode & 07777) | S_IRWXU;
  if (::fchmodat(parent_fd, name, mode, AT_SYMLINK_NOFOLLOW) == 0) return;
  // Without /proc, glibc cannot chmod without following; re-check that it is still a directory.
  struct stat again {};
  if (::fstatat(parent_fd, name, &again, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(again.st_mode) &&
      again.st_ino == st.st_ino && again.st_dev == st.st_dev) {
    (void)::fchmodat(parent_fd, name, mode, 0);
  }
}

// Moves `name` (in dir_fd) to a fresh name directly under root_fd.
bool Hoist(int dir_fd, const char* name, int root_fd, std::uint64_t& counter) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string target = ".codeact-rm-" + std::to_string(counter++);
    if (::renameat2(dir_fd, name, root_fd, target.c_str(), RENAME_NOREPLACE) == 0) return true;
    if (errno == EEXIST) continue;
    if (errno == EINVAL || errno == ENOSYS) {
      // The filesystem has no RENAME_NOREPLACE; a plain rename fails on a non-empty target.
      struct stat st {};
      if (::fstatat(root_fd, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
      return ::renameat(dir_fd, name, root_fd, target.c_str()) == 0;
    }
    return false;
  }
  return false;
}

struct Frame {
  DIR* dir = nullptr;
  std::string name;  // the entry name in the parent frame
};

// One depth-first pass over the directory open at root_fd, removing what it can.
// Returns true if anything was removed or hoisted.
bool ClearOnce(int root_fd, dev_t root_dev, std::uint64_t& hoist_counter) {
  bool progress = false;
  std::vector<Frame> stack;
  const int first = ::fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
  if (first < 0) return false;
  DIR* root_dir = ::fdopendir(first);
  if (root_dir == nullptr) {
    ::close(first);
    return false;
  }
  stack.push_back({root_dir, ""});

  while (!stack.empty()) {
    DIR* dir = stack.back().dir;
    const int dir_fd = ::dirfd(dir);
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      std::string name = std::move(stack.back().name);
      ::closedir(dir);
      stack.pop_back();
      if (!stack.empty() &&
          ::unlinkat(::dirfd(stack.back().dir), name.c_str(), AT_REMOVEDIR) == 0) {
        progress = true;
      }
      continue;
    }
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;

    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      // Symlinks are unlinked, never followed; fifos and devices are never opened.
      if (::unlinkat(dir_fd, name, 0) == 0) progress = true;
      continue;
    }
    // Another filesystem mounted here is not ours to empty.
    if (st.st_dev != root_dev) continue;
    if (::unlinkat(dir_fd, name, AT_REMOVEDIR) == 0) {  // empty: done without opening it
      progress = true;
      continue;
    }
    if (stack.size() >= kMaxOpenDepth) {
      if (Hoist(dir_fd, name, root_fd, hoist_counter)) progress = true;
      continue;
    }
    EnsureOwnerRwx(dir_fd, name, st);
    const int child_fd = ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child_fd < 0) continue;
    struct stat opened {};
    if (::fstat(child_fd, &opened) != 0 || opened.st_dev != st.st_dev ||
        opened.st_ino != st.st_ino) {
      ::close(child_fd);
      continue;
    }
    DIR* child = ::fdopendir(child_fd);
    if (child == nullptr) {
      ::close(child_fd);
      continue;
    }
    stack.push_back({child, name});
  }
  return progress;
}

}  // namespace

bool RemoveTree(const std::string& path) {
  if (path.empty()) return true;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  if (!S_ISDIR(st.st_mode)) return ::unlink(path.c_str()) == 0 || errno == ENOENT;

  std::uint64_t hoist_counter = 0;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return true;
    EnsureOwnerRwx(AT_FDCWD, path.c_str(), st);
    const int root_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root_fd < 0) return false;
    struct stat opened {};
    const bool same =
        ::fstat(root_fd, &opened) == 0 && opened.st_dev == st.st_dev && opened.st_ino == st.st_ino;
    const bool progress = same && ClearOnce(root_fd, st.st_dev, hoist_counter);
    ::close(root_fd);
    if (!progress) break;
  }
  return ::rmdir(path.c_str()) == 0 || errno == ENOENT;
}

StatusOr<TempDir> TempDir::Create(const std::string& prefix) {
  if (prefix.find('/') != std::string::npos || prefix.find('\0') != std::string::npos) {
    return InvalidArgument("temporary directory prefix \"" + prefix +
                           "\" must not contain '/' or NUL");
  }
  const std::string base = ScratchBaseDir();
  // The owner's tag lets a later start remove this directory should this process die first.
  std::string pattern = base + "/" + prefix + ScratchOwnerTag() + "XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    return FailedPrecondition("cannot create a temporary directory \"" + pattern +
                              "\": " + ErrnoText(errno));
  }
  std::string path(buffer.data());
  // mkdtemp already uses 0700; say so explicitly in case a platform differs.
  if (::chmod(path.c_str(), S_IRWXU) != 0) {
    const int err = errno;
    (void)::rmdir(path.c_str());
    return FailedPrecondition("cannot set mode 0700 on \"" + path + "\": " + ErrnoText(err));
  }
  return TempDir(std::move(path));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    if (!path_.empty()) (void)RemoveTree(path_);
    path_ = std::exchange(other.path_, std::string());
  }
  return *this;
}

TempDir::~TempDir() {
  if (!path_.empty()) (void)RemoveTree(path_);
}

}  // namespace codeact::internal
