#include "guard/signal_filter.hpp"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cstddef>
#include <cstdint>

namespace codeact::internal {
namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "SelfSignalFilter: add this architecture's AUDIT_ARCH_* value"
#endif

constexpr std::uint32_t kArgLow = offsetof(seccomp_data, args[0]);  // little-endian: low word first
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "SelfSignalFilter reads the low word first");

sock_filter Stmt(std::uint16_t code, std::uint32_t k) { return BPF_STMT(code, k); }
sock_filter Jump(std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
  return BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, jt, jf);
}

}  // namespace

std::vector<sock_filter> SelfSignalFilter(pid_t pid, pid_t pgid) {
  // Calls whose first argument is the target process, for which only this process will do.
  const std::uint32_t self_only[] = {SYS_tkill, SYS_tgkill, SYS_rt_sigqueueinfo,
                                     SYS_rt_tgsigqueueinfo, SYS_pidfd_open};
  const std::uint32_t self = static_cast<std::uint32_t>(pid);
  const std::uint32_t group = static_cast<std::uint32_t>(-pgid);
  const std::uint32_t allow = SECCOMP_RET_ALLOW;
  const std::uint32_t deny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);

  std::vector<sock_filter> p;
  // Another architecture's call numbers mean other calls: left to the main filter, which kills.
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  p.push_back(Jump(kNativeArch, 1, 0));
  p.push_back(Stmt(BPF_RET | BPF_K, allow));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  // kill: jump to the kill check (after the self-only jumps, the allow, the self check).
  const std::size_t n = sizeof self_only / sizeof self_only[0];
  p.push_back(Jump(SYS_kill, static_cast<std::uint8_t>(n + 1 + 4), 0));
  for (std::size_t i = 0; i < n; ++i) {
    p.push_back(Jump(self_only[i], static_cast<std::uint8_t>(n - i), 0));  // to the self check
  }
  p.push_back(Stmt(BPF_RET | BPF_K, allow));
  // Self check: the target is this process.
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, kArgLow));
  p.push_back(Jump(self, 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, allow));
  p.push_back(Stmt(BPF_RET | BPF_K, deny));
  // Kill check: this process, its process group (0, or -pgid).
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, kArgLow));
  p.push_back(Jump(self, 3, 0));
  p.push_back(Jump(0, 2, 0));
  p.push_back(Jump(pgid > 0 ? group : 0, 1, 0));
  p.push_back(Stmt(BPF_RET | BPF_K, deny));
  p.push_back(Stmt(BPF_RET | BPF_K, allow));
  return p;
}

}  // namespace codeact::internal
