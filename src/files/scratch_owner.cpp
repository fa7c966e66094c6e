#include "files/scratch_owner.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>

#include "codeact/executor.hpp"
#include "files/mount_capture.hpp"
#include "os/proc_stat.hpp"

namespace codeact::internal {
namespace {

constexpr std::string_view kDirPrefix = "codeact-";
constexpr std::size_t kKeyLength = 8;
constexpr std::size_t kRandomPartLength = 6;  // mkdtemp's XXXXXX

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Field 22 of /proc/<pid>/stat (the start time in clock ticks after boot), read after the
// command name, which may itself hold spaces and parentheses.
std::optional<std::uint64_t> StartTime(const std::string& pid) {
  return ProcStatNumber(ReadSmallFile("/proc/" + pid + "/stat"), 22);
}

// Same boot and same pid namespace: a hash of the boot id and the namespace's identity.
std::string Key() {
  std::string ns(64, '\0');
  const ssize_t n = ::readlink("/proc/self/ns/pid", ns.data(), ns.size());
  ns.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  const std::string text = ReadSmallFile("/proc/sys/kernel/random/boot_id") + ns;
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  for (std::size_t i = 0; i < kKeyLength; ++i, h >>= 4) key += kHex[h & 0xf];
  return key;
}

bool AllDigits(std::string_view s) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

struct Tag {
  std::string key;
  std::string pid;
  std::string start;
};

// The owner tag in "<prefix>o<key>.<pid>.<start>-XXXXXX".
std::optional<Tag> ParseTag(std::string_view name) {
  if (!name.starts_with(kDirPrefix) || name.size() < kRandomPartLength + 2) return std::nullopt;
  const std::size_t dash = name.size() - kRandomPartLength - 1;
  if (name[dash] != '-') return std::nullopt;
  const std::size_t begin = name.rfind('-', dash - 1);
  if (begin == std::string_view::npos) return std::nullopt;
  const std::string_view token = name.substr(begin + 1, dash - begin - 1);  // o<key>.<pid>.<start>
  if (token.size() < 1 + kKeyLength + 4 || token[0] != 'o' || token[1 + kKeyLength] != '.')
    return std::nullopt;
  const std::string_view rest = token.substr(2 + kKeyLength);
  const std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  Tag tag{std::string(token.substr(1, kKeyLength)), std::string(rest.substr(0, dot)),
          std::string(rest.substr(dot + 1))};
  if (!AllDigits(tag.pid) || !AllDigits(tag.start)) return std::nullopt;
  return tag;
}

const std::string& OwnKey() {
  static const std::string key = Key();
  return key;
}

}  // namespace

namespace {

// Whether a user other than the directory's owner can reach `dir`: every directory from `/` down
// to it lets others search it. A path that does not resolve counts as reachable (the creation
// below it then fails with its own error).
bool OthersMaySearch(const std::string& dir) {
  std::string at = dir.empty() ? "/" : dir;
  while (true) {
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) return true;
    if ((st.st_mode & S_IXOTH) == 0) return false;
    if (at == "/") return true;
    const std::size_t slash = at.rfind('/');
    at = slash == 0 ? std::string("/") : at.substr(0, slash);
  }
}

// A root host's own runtime directory for scratch (kRootRuntimeDir, made 0711 here): root's own,
// a directory, not a link, writable by root alone and searchable by the runs' uids. "" when it is
// not so and cannot be made so.
std::string RootRuntimeDir() {
  constexpr const char* kRootRuntimeDir = "/run/codeact";
  if (::mkdir(kRootRuntimeDir, 0711) != 0 && errno != EEXIST) return "";
  struct stat st {};
  if (::lstat(kRootRuntimeDir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0) return "";
  if ((st.st_mode & 07777) != 0711 && ::chmod(kRootRuntimeDir, 0711) != 0) return "";
  if (!OthersMaySearch(kRootRuntimeDir)) return "";
  return kRootRuntimeDir;
}

}  // namespace

std::string ScratchBaseDir() {
  std::string base = "/tmp";
  if (const char* env = std::getenv("TMPDIR"); env != nullptr && env[0] == '/') base = env;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base == "/") base.clear();
  // A root host's runs have uids of their own, which must reach their scratch directory (the
  // process level's chdir, the launcher's root after it dropped to the run's uid): a TMPDIR they
  // cannot search (a 0700 one, as mktemp -d makes) gives way to root's runtime directory. The
  // scratch directories themselves stay 0700 either way.
  if (::geteuid() == 0 && !OthersMaySearch(base)) {
    if (std::string runtime = RootRuntimeDir(); !runtime.empty()) return runtime;
  }
  return base;
}

std::string ScratchOwnerTag() {
  // Computed once per process (a forked copy computes its own).
  static std::mutex mu;
  static pid_t tag_pid = 0;
  static std::string tag;
  std::lock_guard lock(mu);
  if (tag_pid != ::getpid()) {
    tag_pid = ::getpid();
    const std::string pid = std::to_string(tag_pid);
    const std::optional<std::uint64_t> start = StartTime(pid);
    tag = start ? "o" + OwnKey() + "." + pid + "." + std::to_string(*start) + "-" : "";
  }
  return tag;
}

ScratchSweep RemoveDeadScratch(const std::string& base) {
  ScratchSweep sweep;
  DIR* d = ::opendir(base.empty() ? "/" : base.c_str());
  if (d == nullptr) return sweep;
  const uid_t me = ::geteuid();
  std::vector<std::string> dead;
  while (const dirent* e = ::readdir(d)) {
    const std::optional<Tag> tag = ParseTag(e->d_name);
    if (!tag || tag->key != OwnKey()) continue;
    struct stat st {};
    // A root host hands its runs' directories to their per-run uids (uid_lease.hpp, the default
    // range): those are its own too; another user's directory is never touched.
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
      continue;
    const RunUidRange runs;
    const bool run_uid = me == 0 && st.st_uid >= runs.first && st.st_uid - runs.first < runs.count;
    if (st.st_uid != me && !run_uid) {
      continue;
    }
    const std::optional<std::uint64_t> start = StartTime(tag->pid);
    if (start && std::to_string(*start) == tag->start) continue;  // the owner lives
    dead.emplace_back(e->d_name);
  }
  ::closedir(d);
  for (const auto& name : dead) {
    const std::string path = base + "/" + name;
    (RemoveTree(path) ? sweep.removed : sweep.not_removed).push_back(path);
  }
  return sweep;
}

}  // namespace codeact::internal
