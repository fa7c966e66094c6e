#include "guard/landlock.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "os/errno_status.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {
namespace {

// <linux/landlock.h> of older kernel headers stops at ABI 2; the values are the kernel's ABI.
constexpr std::uint64_t kExecute = 1ULL << 0;
constexpr std::uint64_t kWriteFile = 1ULL << 1;
constexpr std::uint64_t kReadFile = 1ULL << 2;
constexpr std::uint64_t kReadDir = 1ULL << 3;
constexpr std::uint64_t kRemoveDir = 1ULL << 4;
constexpr std::uint64_t kRemoveFile = 1ULL << 5;
constexpr std::uint64_t kMakeChar = 1ULL << 6;
constexpr std::uint64_t kMakeDir = 1ULL << 7;
constexpr std::uint64_t kMakeReg = 1ULL << 8;
constexpr std::uint64_t kMakeSock = 1ULL << 9;
constexpr std::uint64_t kMakeFifo = 1ULL << 10;
constexpr std::uint64_t kMakeBlock = 1ULL << 11;
constexpr std::uint64_t kMakeSym = 1ULL << 12;
constexpr std::uint64_t kRefer = 1ULL << 13;                   // ABI 2
constexpr std::uint64_t kTruncate = 1ULL << 14;                // ABI 3
constexpr std::uint64_t kIoctlDev = 1ULL << 15;                // ABI 5
constexpr std::uint64_t kNetBindTcp = 1ULL << 0;               // ABI 4
constexpr std::uint64_t kNetConnectTcp = 1ULL << 1;            // ABI 4
constexpr std::uint64_t kScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
constexpr std::uint64_t kScopeSignal = 1ULL << 1;              // ABI 6

// The rights a rule on a regular file (not a directory) may carry.
constexpr std::uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;

constexpr std::uint64_t kReadRights = kReadFile | kReadDir;
constexpr std::uint64_t kExecRights = kReadRights | kExecute;
// Not kMakeChar/kMakeBlock (a device node opens the disk to a root host), kExecute, kIoctlDev.
constexpr std::uint64_t kWriteRights = kReadRights | kWriteFile | kRemoveDir | kRemoveFile |
                                       kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeSym |
                                       kRefer | kTruncate;

// struct landlock_ruleset_attr as of ABI 6; older kernels are given the prefix they know.
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};

std::uint64_t HandledFs(int abi) {
  std::uint64_t fs = (kMakeSym << 1) - 1;  // ABI 1: EXECUTE .. MAKE_SYM
  if (abi >= 2) fs |= kRefer;
  if (abi >= 3) fs |= kTruncate;
  if (abi >= 5) fs |= kIoctlDev;
  return fs;
}

std::string Errno(const std::string& what, int err) { return what + " failed: " + ErrnoText(err); }

}  // namespace

int LandlockAbi() {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

std::string ApplyLandlock(const LandlockPaths& paths, int abi) {
  if (abi < 1) return "Landlock is not available";
  const std::uint64_t handled = HandledFs(abi);
  RulesetAttr attr{handled, 0, 0};
  std::size_t attr_size = sizeof attr.handled_access_fs;
  if (abi >= 4) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;  // no rule grants either: no TCP at all
    attr_size = offsetof(RulesetAttr, scoped);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    attr_size = sizeof attr;
  }
  const UniqueFd ruleset(
      static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0)));
  if (!ruleset) return Errno("landlock_create_ruleset", errno);

  auto add = [&](const std::string& path, std::uint64_t rights) -> std::string {
    const UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (!fd) return errno == ENOENT || errno == ENOTDIR ? "" : Errno("open " + path, errno);
    struct stat st {};
    std::string error;
    if (::fstat(fd.get(), &st) != 0) {
      error = Errno("fstat " + path, errno);
    } else {
      landlock_path_beneath_attr rule{};
      rule.allowed_access = rights & handled & (S_ISDIR(st.st_mode) ? ~0ULL : kFileRights);
      rule.parent_fd = fd.get();
      if (::syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &rule, 0) !=
          0) {
        error = Errno("landlock_add_rule " + path, errno);
      }
    }
    return error;
  };
  std::string error;
  for (const auto& [list, rights] :
       {std::pair{&paths.exec, kExecRights}, std::pair{&paths.read, kReadRights},
        std::pair{&paths.write, kWriteRights}}) {
    for (const auto& path : *list) {
      if (error.empty()) error = add(path, rights);
    }
  }
  if (error.empty() && ::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    error = Errno("landlock_restrict_self", errno);
  }
  return error;
}

}  // namespace codeact::internal
