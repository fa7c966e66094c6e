#include "common/user_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <string>
#include <tuple>
#include <vector>

#include "os/unique_fd.hpp"

namespace codeact::internal {
namespace {

// Owned by `uid` (or root where `root_ok`) and writable by nobody else.
bool Trusted(const struct stat& st, uid_t uid, bool root_ok) {
  return (st.st_uid == uid || (root_ok && st.st_uid == 0)) &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::string HomeOf(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return "";
  return pw.pw_dir != nullptr ? pw.pw_dir : "";
}

// The configured location, or "" for none.
std::string CacheLocation() {
  if (const char* env = std::getenv("CODEACT_CACHE_DIR")) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/codeact";
  }
  // HOME names the user's own home only when the process runs as that user (sudo keeps it).
  std::string home;
  const char* env_home = std::getenv("HOME");
  if (env_home != nullptr && env_home[0] == '/' && ::getuid() == ::geteuid()) home = env_home;
  if (home.empty()) home = HomeOf(::geteuid());
  if (home.empty() || home[0] != '/') return "";
  return home + "/.cache/codeact";
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 200 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Reads `size` bytes of `fd` into `content`; false on a short read or an error.
bool ReadAll(int fd, std::string& content, std::size_t size) {
  content.assign(size, '\0');
  std::size_t got = 0;
  while (got < content.size()) {
    const ssize_t n = ::read(fd, content.data() + got, content.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

// The entry at `path` opened, when it is a trusted regular file holding exactly `content`.
UniqueFd OpenMatching(const std::string& path, std::string_view content) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return fd;
  struct stat st {};
  std::string held;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !Trusted(st, ::geteuid(), false) ||
      static_cast<std::size_t>(st.st_size) != content.size() ||
      !ReadAll(fd.get(), held, content.size()) || held != content) {
    return UniqueFd();
  }
  return fd;
}

}  // namespace

std::optional<UserCache> UserCache::Open() {
  std::string dir = CacheLocation();
  if (dir.empty() || dir[0] != '/') return std::nullopt;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const uid_t uid = ::geteuid();
  const std::string parent = dir.substr(0, dir.rfind('/'));
  if (!parent.empty()) {
    // ~/.cache itself may be missing on a fresh account; it is the user's, private.
    if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) return std::nullopt;
    struct stat st {};
    if (::lstat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !Trusted(st, uid, true))
      return std::nullopt;
  }
  // 0755: a root host's runs read nothing here (the executor links or copies what it verified
  // into its own directory), but a user may share the directory read-only with another of their
  // accounts.
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return std::nullopt;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !Trusted(st, uid, false))
    return std::nullopt;
  return UserCache(std::move(dir));
}

std::optional<std::string> UserCache::Read(std::string_view name, std::size_t max_bytes) const {
  if (!ValidName(name)) return std::nullopt;
  const std::string path = dir_ + "/" + std::string(name);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !Trusted(st, ::geteuid(), false) ||
      static_cast<std::size_t>(st.st_size) > max_bytes) {
    return std::nullopt;
  }
  std::string content;
  if (!ReadAll(fd.get(), content, static_cast<std::size_t>(st.st_size))) return std::nullopt;
  return content;
}

bool UserCache::Write(std::string_view name, std::string_view content) const {
  if (!ValidName(name)) return false;
  std::string tmp = dir_ + "/.tmp-XXXXXX";
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd) return false;
  bool ok = ::fchmod(fd.get(), 0644) == 0;
  for (std::size_t put = 0; ok && put < content.size();) {
    const ssize_t n = ::write(fd.get(), content.data() + put, content.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ok = false;
    if (n > 0) put += static_cast<std::size_t>(n);
  }
  fd.reset();
  const std::string path = dir_ + "/" + std::string(name);
  if (ok) ok = ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  // A write is a miss, already paying for the work it saves next time: the scan (a stat per
  // entry) rides on the first of a process.
  static std::atomic<bool> pruned{false};
  if (ok && !pruned.exchange(true)) Prune(CacheBounds{});
  return ok;
}

bool UserCache::LinkEntry(std::string_view name, std::string_view content,
                          const std::string& dest) const {
  if (!ValidName(name)) return false;
  const std::string path = dir_ + "/" + std::string(name);
  UniqueFd fd = OpenMatching(path, content);
  if (!fd) {
    if (!Write(name, content)) return false;
    fd = OpenMatching(path, content);
    if (!fd) return false;
  }
  const std::string opened = "/proc/self/fd/" + std::to_string(fd.get());
  return ::linkat(AT_FDCWD, opened.c_str(), AT_FDCWD, dest.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

void UserCache::Remove(std::string_view name) const {
  if (ValidName(name)) ::unlink((dir_ + "/" + std::string(name)).c_str());
}

void UserCache::Prune(const CacheBounds& bounds) const {
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) return;
  struct Entry {
    std::string name;
    timespec changed;
    std::int64_t bytes;
  };
  std::vector<Entry> entries;
  std::int64_t total = 0;
  const time_t stale_before = ::time(nullptr) - 3600;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    struct stat st {};
    if (name == "." || name == ".." ||
        ::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (name.rfind(".tmp-", 0) == 0) {
      if (st.st_mtime < stale_before) ::unlinkat(::dirfd(dir), e->d_name, 0);
      continue;
    }
    if (!ValidName(name)) continue;
    entries.push_back({std::string(name), st.st_ctim, st.st_size});
    total += st.st_size;
  }
  if (entries.size() > bounds.entries || total > bounds.bytes) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.changed.tv_sec, a.changed.tv_nsec) <
             std::tie(b.changed.tv_sec, b.changed.tv_nsec);
    });
    std::size_t left = entries.size();
    for (const Entry& entry : entries) {
      if (left <= bounds.entries / 4 * 3 && total <= bounds.bytes / 4 * 3) break;
      if (::unlinkat(::dirfd(dir), entry.name.c_str(), 0) != 0 && errno != ENOENT) continue;
      --left;
      total -= entry.bytes;
    }
  }
  ::closedir(dir);
}

}  // namespace codeact::internal
