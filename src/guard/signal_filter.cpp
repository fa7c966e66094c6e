#include "guard/signal_filter.hpp"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>

#include "sandbox/native_arch.hpp"

namespace codeact::internal {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "SelfTargetFilter reads an argument's low word first");
constexpr std::uint32_t ArgLow(unsigned arg) {
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * arg);
}

constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kDeny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);

// A call whose argument `arg` must be one of `allowed` (else EPERM).
struct TargetRule {
  std::uint32_t nr;
  unsigned arg;
  std::vector<std::uint32_t> allowed;
};

std::vector<TargetRule> SignalRules(std::uint32_t self, std::uint32_t group) {
  std::vector<TargetRule> rules = {{SYS_kill, 0, {self, 0, group}}};
  for (std::uint32_t nr :
       {SYS_tkill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo, SYS_pidfd_open}) {
    rules.push_back({nr, 0, {self}});
  }
  return rules;
}

std::vector<TargetRule> ResourceRules(std::uint32_t self) {
  std::vector<TargetRule> rules = {{SYS_setpriority, 1, {0, self}}, {SYS_ioprio_set, 1, {0, self}}};
  for (std::uint32_t nr :
       {SYS_prlimit64, SYS_sched_setaffinity, SYS_sched_setscheduler, SYS_sched_setparam,
        SYS_sched_setattr, SYS_migrate_pages, SYS_move_pages}) {
    rules.push_back({nr, 0, {0, self}});
  }
  return rules;
}

std::uint8_t Offset(std::size_t n) {
  if (n > 255) std::abort();  // a rule this long is a bug here, not input
  return static_cast<std::uint8_t>(n);
}

// One block per rule, in turn:  ld nr; jeq nr ? next : skip-block; ld arg; jeq v.. -> allow;
// ret deny; ret allow. A block whose number differs is skipped with the number still loaded.
void AddRule(std::vector<sock_filter>& p, const TargetRule& r) {
  const std::size_t values = r.allowed.size();
  const std::size_t body = 1 + values + 2;  // ld arg, the jumps, ret deny, ret allow
  p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, r.nr, 0, Offset(body)));
  p.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ArgLow(r.arg)));
  for (std::size_t i = 0; i < values; ++i) {
    p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, r.allowed[i], Offset(values - i), 0));
  }
  p.push_back(BPF_STMT(BPF_RET | BPF_K, kDeny));
  p.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
}

}  // namespace

std::vector<sock_filter> SelfTargetFilter(pid_t pid, pid_t pgid) {
  const std::uint32_t self = static_cast<std::uint32_t>(pid);
  const std::uint32_t group = static_cast<std::uint32_t>(pgid > 0 ? -pgid : 0);
  std::vector<sock_filter> p;
  // Another architecture's call numbers mean other calls: left to the main filter, which kills.
  p.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0));
  p.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
  p.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  for (const auto& group_rules : {SignalRules(self, group), ResourceRules(self)}) {
    for (const TargetRule& r : group_rules) AddRule(p, r);
  }
  p.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
  return p;
}

}  // namespace codeact::internal
