#include "sandbox/seccomp_rules.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>

namespace codeact::internal {
namespace {

constexpr const char* kKernelAdministration[] = {"ptrace",
                                                 "process_vm_readv",
                                                 "process_vm_writev",
                                                 "pidfd_getfd",
                                                 "kcmp",
                                                 "mount",
                                                 "umount2",
                                                 "pivot_root",
                                                 "chroot",
                                                 "open_tree",
                                                 "move_mount",
                                                 "fsopen",
                                                 "fsconfig",
                                                 "fsmount",
                                                 "fspick",
                                                 "mount_setattr",
                                                 "unshare",
                                                 "setns",
                                                 "keyctl",
                                                 "add_key",
                                                 "request_key",
                                                 "bpf",
                                                 "perf_event_open",
                                                 "userfaultfd",
                                                 "kexec_load",
                                                 "kexec_file_load",
                                                 "init_module",
                                                 "finit_module",
                                                 "delete_module",
                                                 "io_uring_setup",
                                                 "io_uring_enter",
                                                 "io_uring_register",
                                                 "reboot",
                                                 "swapon",
                                                 "swapoff",
                                                 "syslog",
                                                 "acct",
                                                 "quotactl",
                                                 "lookup_dcookie",
                                                 "open_by_handle_at",
                                                 "name_to_handle_at",
                                                 "iopl",
                                                 "ioperm",
                                                 "personality",
                                                 "uselib",
                                                 "settimeofday",
                                                 "clock_settime",
                                                 "clock_adjtime",
                                                 "adjtimex",
                                                 "sethostname",
                                                 "setdomainname",
                                                 "fanotify_init",
                                                 "vhangup"};

constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,     CLONE_NEWPID, CLONE_NEWNET,
                                             CLONE_NEWIPC,    CLONE_NEWUTS, CLONE_NEWUSER,
                                             CLONE_NEWCGROUP, 0x00000080 /*TIME*/};

constexpr scmp_datum_t kPrivilegedModeBits[] = {S_ISUID, S_ISGID};
// What a mode change may not add besides them: the sticky bit, and write for others.
// Creation modes keep S_IWOTH (open's 0666, mkdir's 0777): the umask, which may not lose 022
// (DenyWeakenedFileModes), takes it off.
constexpr scmp_datum_t kWeakeningModeBits[] = {S_ISVTX, S_IWOTH};
// O_TMPFILE includes O_DIRECTORY; its own bit is what marks the call as creating a file.
constexpr scmp_datum_t kTmpfileBit = O_TMPFILE & ~O_DIRECTORY;

RuleStatus Failed(int rc, std::string rule) { return {rc, std::move(rule)}; }

// A rule on each call named by string: calls this architecture does not have are skipped.
RuleStatus ByName(scmp_filter_ctx ctx, uint32_t action, std::span<const char* const> names) {
  for (const char* name : names) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;
    if (int rc = seccomp_rule_add(ctx, action, nr, 0); rc < 0) return Failed(rc, name);
  }
  return {};
}

RuleStatus ByName(scmp_filter_ctx ctx, uint32_t action, std::initializer_list<const char*> names) {
  return ByName(ctx, action, std::span(names.begin(), names.size()));
}

// EPERM for `nr` when its arguments match `cmp`.
RuleStatus DenyWhen(scmp_filter_ctx ctx, int nr, scmp_arg_cmp cmp, std::string rule) {
  if (int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp); rc < 0)
    return Failed(rc, std::move(rule));
  return {};
}

// EPERM when argument `arg` of `nr` holds one of `bits`.
template <std::size_t N>
RuleStatus ModeRule(scmp_filter_ctx ctx, int nr, const char* name, unsigned arg,
                    const scmp_datum_t (&bits)[N]) {
  for (scmp_datum_t bit : bits) {
    const scmp_arg_cmp mode = {arg, SCMP_CMP_MASKED_EQ, bit, bit};
    if (int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &mode); rc < 0)
      return Failed(rc, name);
  }
  return {};
}

// The calls that set a mode (chmod) or create with one, and which argument holds it.
struct ModeCall {
  int nr;
  const char* name;
  unsigned mode_arg;
};
constexpr ModeCall kChmodCalls[] = {{SCMP_SYS(chmod), "chmod", 1},
                                    {SCMP_SYS(fchmod), "fchmod", 1},
                                    {SCMP_SYS(fchmodat), "fchmodat", 2}};
constexpr ModeCall kCreateCalls[] = {{SCMP_SYS(mkdir), "mkdir", 1},
                                     {SCMP_SYS(mkdirat), "mkdirat", 2},
                                     {SCMP_SYS(mknod), "mknod", 1},
                                     {SCMP_SYS(mknodat), "mknodat", 2}};

// ModeRule for each of `calls`.
template <std::size_t N>
RuleStatus ModeRules(scmp_filter_ctx ctx, std::span<const ModeCall> calls,
                     const scmp_datum_t (&bits)[N]) {
  for (const ModeCall& c : calls) {
    if (RuleStatus s = ModeRule(ctx, c.nr, c.name, c.mode_arg, bits); !s.ok()) return s;
  }
  return {};
}

// EPERM when `nr` creates a file (flags argument `flags_arg`) with a privileged mode.
RuleStatus OpenModeRule(scmp_filter_ctx ctx, int nr, const char* name, unsigned flags_arg,
                        unsigned mode_arg) {
  for (scmp_datum_t create : {scmp_datum_t{O_CREAT}, kTmpfileBit}) {
    for (scmp_datum_t bit : kPrivilegedModeBits) {
      const scmp_arg_cmp cmp[] = {{flags_arg, SCMP_CMP_MASKED_EQ, create, create},
                                  {mode_arg, SCMP_CMP_MASKED_EQ, bit, bit}};
      if (int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, cmp); rc < 0)
        return Failed(rc, name);
    }
  }
  return {};
}

}  // namespace

RuleStatus DenyKernelAdministration(scmp_filter_ctx ctx) {
  return ByName(ctx, SCMP_ACT_ERRNO(EPERM), kKernelAdministration);
}

RuleStatus DenyNewNamespaces(scmp_filter_ctx ctx) {
  for (unsigned long flag : kNamespaceFlags) {
    if (RuleStatus s =
            DenyWhen(ctx, SCMP_SYS(clone), SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag), "clone");
        !s.ok())
      return s;
  }
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc < 0)
    return Failed(rc, "clone3");
  return {};
}

RuleStatus DenyTerminalInjection(scmp_filter_ctx ctx) {
  for (scmp_datum_t request : {scmp_datum_t{TIOCSTI}, scmp_datum_t{TIOCLINUX}}) {
    // The request is an unsigned int: compare its 32 bits only.
    if (RuleStatus s = DenyWhen(ctx, SCMP_SYS(ioctl),
                                SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, request), "ioctl");
        !s.ok())
      return s;
  }
  return {};
}

RuleStatus AllowOnlyUnixSockets(scmp_filter_ctx ctx) {
  for (int call : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    if (RuleStatus s = DenyWhen(ctx, call, SCMP_A0(SCMP_CMP_NE, AF_UNIX), "socket families");
        !s.ok())
      return s;
  }
  return {};
}

RuleStatus DenyPrivilegedFileModes(scmp_filter_ctx ctx) {
  if (RuleStatus s = ModeRules(ctx, kChmodCalls, kPrivilegedModeBits); !s.ok()) return s;
  if (RuleStatus s = ModeRules(ctx, kCreateCalls, kPrivilegedModeBits); !s.ok()) return s;
  if (RuleStatus s = ModeRule(ctx, SCMP_SYS(creat), "creat", 1, kPrivilegedModeBits); !s.ok())
    return s;
  if (RuleStatus s = OpenModeRule(ctx, SCMP_SYS(open), "open", 1, 2); !s.ok()) return s;
  if (RuleStatus s = OpenModeRule(ctx, SCMP_SYS(openat), "openat", 2, 3); !s.ok()) return s;
  if (RuleStatus s = ByName(ctx, SCMP_ACT_ERRNO(EPERM), {"setxattr", "lsetxattr", "fsetxattr"});
      !s.ok())
    return s;
  return ByName(ctx, SCMP_ACT_ERRNO(ENOSYS), {"fchmodat2", "openat2"});
}

RuleStatus DenyWeakenedFileModes(scmp_filter_ctx ctx) {
  if (RuleStatus s = ModeRules(ctx, kChmodCalls, kWeakeningModeBits); !s.ok()) return s;
  const scmp_datum_t sticky[] = {S_ISVTX};
  if (RuleStatus s = ModeRules(ctx, kCreateCalls, sticky); !s.ok()) return s;
  // A umask without 022's bits: the umask is a process's, and the run's starts at 022 or
  // stricter (the guard sets it before the filter).
  for (scmp_datum_t bit : {scmp_datum_t{S_IWGRP}, scmp_datum_t{S_IWOTH}}) {
    if (RuleStatus s = DenyWhen(ctx, SCMP_SYS(umask), SCMP_A0(SCMP_CMP_MASKED_EQ, bit, 0), "umask");
        !s.ok())
      return s;
  }
  return {};
}

RuleStatus DenyForeignPriorityTargets(scmp_filter_ctx ctx) {
  // setpriority(which, who, prio) and ioprio_set(which, who, ioprio): a process group or a
  // user (who 0: the caller's) reaches every process of it. Other values of `which` are EINVAL
  // in the kernel. The process's own pid is checked per child (guard/signal_filter.hpp).
  constexpr scmp_datum_t kIoprioWhoPgrp = 2;  // IOPRIO_WHO_PGRP
  constexpr scmp_datum_t kIoprioWhoUser = 3;  // IOPRIO_WHO_USER
  const struct {
    int nr;
    const char* name;
    scmp_datum_t which;
  } calls[] = {{SCMP_SYS(setpriority), "setpriority", PRIO_PGRP},
               {SCMP_SYS(setpriority), "setpriority", PRIO_USER},
               {SCMP_SYS(ioprio_set), "ioprio_set", kIoprioWhoPgrp},
               {SCMP_SYS(ioprio_set), "ioprio_set", kIoprioWhoUser}};
  for (const auto& c : calls) {
    // `which` is an int: compare its 32 bits only.
    if (RuleStatus s =
            DenyWhen(ctx, c.nr, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, c.which), c.name);
        !s.ok())
      return s;
  }
  return {};
}

RuleStatus DenySysvIpcAndMessageQueues(scmp_filter_ctx ctx) {
  return ByName(ctx, SCMP_ACT_ERRNO(EPERM),
                {"shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
                 "semget", "semop", "semtimedop", "semctl", "mq_open", "mq_unlink", "mq_timedsend",
                 "mq_timedreceive", "mq_notify", "mq_getsetattr"});
}

RuleStatus DenyInotify(scmp_filter_ctx ctx) {
  return ByName(ctx, SCMP_ACT_ERRNO(EPERM), {"inotify_init", "inotify_init1"});
}

RuleStatus DenyMemoryFiles(scmp_filter_ctx ctx) {
  return ByName(ctx, SCMP_ACT_ERRNO(EPERM), {"memfd_create", "memfd_secret"});
}

int SyscallTableEnd() {
  for (int nr = kMaxSyscallNumber - 1; nr >= 0; --nr) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name != nullptr) {
      std::free(name);
      return nr + 1;
    }
  }
  return 0;
}

RuleStatus DenyUnknownSystemCalls(scmp_filter_ctx ctx) {
  const int end = SyscallTableEnd();
  for (int nr = 0; nr < end; ++nr) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name != nullptr) {
      std::free(name);
      continue;
    }
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0); rc < 0) {
      return Failed(rc, "unknown system call " + std::to_string(nr));
    }
  }
  return {};
}

RuleStatus DenyProcessCreation(scmp_filter_ctx ctx) {
  if (RuleStatus s = ByName(ctx, SCMP_ACT_ERRNO(EPERM),
                            {"fork", "vfork", "execve", "execveat", "pidfd_send_signal"});
      !s.ok())
    return s;
  if (RuleStatus s = DenyWhen(ctx, SCMP_SYS(clone), SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0),
                              "clone without CLONE_THREAD");
      !s.ok())
    return s;
  return {};
}

RuleStatus DenyNetworkAddresses(scmp_filter_ctx ctx) {
  if (RuleStatus s = ByName(ctx, SCMP_ACT_ERRNO(EPERM), {"connect", "bind", "sendmsg", "sendmmsg"});
      !s.ok())
    return s;
  // send() is sendto(..., NULL, 0): asyncio's self-pipe needs it.
  if (RuleStatus s =
          DenyWhen(ctx, SCMP_SYS(sendto), SCMP_A4(SCMP_CMP_NE, 0), "sendto with an address");
      !s.ok())
    return s;
  return {};
}

RuleStatus AddLauncherRules(scmp_filter_ctx ctx) {
  for (auto add : {DenyKernelAdministration, DenyNewNamespaces, DenyTerminalInjection,
                   AllowOnlyUnixSockets, DenyPrivilegedFileModes, DenyWeakenedFileModes,
                   DenyForeignPriorityTargets, DenyUnknownSystemCalls}) {
    if (RuleStatus s = add(ctx); !s.ok()) return s;
  }
  return {};
}

namespace {

// "A native system call number from SyscallTableEnd() up: ENOSYS", for the start of a program.
// Another architecture, and the x32 numbers (bit 30), go on to libseccomp's program, which
// kills the process for them.
std::vector<sock_filter> UnknownTailPrefix() {
  const auto end = static_cast<std::uint32_t>(SyscallTableEnd());
  constexpr std::uint32_t kX32Bit = 0x40000000;
  return {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, 4),  // else: the program
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 2, 0),  // x32: the program
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, end, 0, 1),      // below the end: the program
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
  };
}

}  // namespace

std::vector<sock_filter> BuildSeccompProgram(RuleStatus (*add)(scmp_filter_ctx),
                                             std::string& error) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) {
    error = "seccomp_init failed";
    return {};
  }
  std::vector<sock_filter> program;
  // Other ABIs (i386, x32) kill the whole process, not only the calling thread; a binary tree of
  // system call numbers takes ~10 comparisons a call instead of hundreds.
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  const RuleStatus s = rc == 0 ? add(ctx) : RuleStatus{rc, "filter attributes"};
  std::FILE* out = s.ok() ? std::tmpfile() : nullptr;
  if (!s.ok()) {
    error = "rule " + s.rule + ": " + std::strerror(-s.rc);
  } else if (out == nullptr || seccomp_export_bpf(ctx, fileno(out)) != 0) {
    error = "seccomp_export_bpf failed";
  } else {
    program = UnknownTailPrefix();
    std::rewind(out);
    sock_filter insn;
    while (std::fread(&insn, sizeof insn, 1, out) == 1) program.push_back(insn);
    if (program.empty() || program.size() > BPF_MAXINSNS) {
      error = "a program of " + std::to_string(program.size()) + " instructions";
      program.clear();
    }
  }
  if (out != nullptr) std::fclose(out);
  seccomp_release(ctx);
  return program;
}

RuleStatus AddGuardRules(scmp_filter_ctx ctx) {
  if (RuleStatus s = AddLauncherRules(ctx); !s.ok()) return s;
  for (auto add : {DenyProcessCreation, DenyNetworkAddresses, DenySysvIpcAndMessageQueues,
                   DenyInotify, DenyMemoryFiles}) {
    if (RuleStatus s = add(ctx); !s.ok()) return s;
  }
  return {};
}

}  // namespace codeact::internal
