#include "sandbox/seccomp_filter.hpp"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>

#include <string>

#include "sandbox/setup_report.hpp"

namespace codeact::internal {
namespace {

constexpr const char* kDenied[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "unshare", "setns",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "lookup_dcookie",
    "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "personality", "uselib",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "fanotify_init", "vhangup"};

constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWPID, CLONE_NEWNET,    CLONE_NEWIPC,
                                             CLONE_NEWUTS, CLONE_NEWUSER, CLONE_NEWCGROUP, 0x00000080 /*TIME*/};

struct FilterContext {
  scmp_filter_ctx ctx = nullptr;
  ~FilterContext() {
    if (ctx) seccomp_release(ctx);
  }
};

// libseccomp returns -errno.
void MustRule(int rc, const std::string& step) {
  if (rc < 0) FailStep(step, -rc);
}

}  // namespace

void InstallSeccompFilter() {
  FilterContext f;
  f.ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (f.ctx == nullptr) FailStep("seccomp_init", ENOMEM);
  for (const char* name : kDenied) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not a system call on this architecture
    MustRule(seccomp_rule_add(f.ctx, SCMP_ACT_ERRNO(EPERM), nr, 0), std::string("seccomp rule for ") + name);
  }
  for (unsigned long flag : kNamespaceFlags) {
    MustRule(seccomp_rule_add(f.ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)),
             "seccomp rule for clone");
  }
  MustRule(seccomp_rule_add(f.ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0), "seccomp rule for clone3");
  for (int call : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    MustRule(seccomp_rule_add(f.ctx, SCMP_ACT_ERRNO(EPERM), call, 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX)),
             "seccomp rule for socket families");
  }
  MustRule(seccomp_load(f.ctx), "seccomp_load");
}

}  // namespace codeact::internal
