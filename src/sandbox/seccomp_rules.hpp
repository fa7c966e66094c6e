// SeccompRules: the rule sets of codeact's two system-call filters, added to a libseccomp
// context: the launcher's (the `namespaces` level, applied to the sandboxed command) and the
// runtime guard's (every level, armed by the runner; src/guard). Both filters are built from
// these functions by codeact-seccomp-gen at build time (seccomp_programs.hpp says why), so the
// pieces they share — the kernel administration deny-list, setuid/setgid modes, unknown system
// calls — are written once. Each function returns libseccomp's result and the rule that failed.
#pragma once

#include <linux/filter.h>
#include <seccomp.h>

#include <string>
#include <vector>

namespace codeact::internal {

struct RuleStatus {
  int rc = 0;        // 0, or libseccomp's negative errno
  std::string rule;  // the rule being added when it failed
  bool ok() const { return rc == 0; }
};

// System call numbers below this are checked against libseccomp's table (DenyUnknownSystemCalls).
inline constexpr int kMaxSyscallNumber = 1024;

// One past the highest native system call number that this libseccomp's table names: every
// number from here up is unknown to it (SyscallTableEnd() <= kMaxSyscallNumber).
int SyscallTableEnd();

// EPERM for the calls that administer the kernel or reach into other processes: ptrace,
// process_vm_*, mount and the new mount API, pivot_root, chroot, unshare, setns, keyctl, bpf,
// perf_event_open, userfaultfd, io_uring_*, kexec_*, module loading, personality, clock setting
// and more (the list is in the .cpp).
RuleStatus DenyKernelAdministration(scmp_filter_ctx ctx);

// EPERM for clone with a CLONE_NEW* flag; ENOSYS for clone3, whose flags sit behind a pointer
// the filter cannot read (libc then falls back to clone).
RuleStatus DenyNewNamespaces(scmp_filter_ctx ctx);

// EPERM for ioctl TIOCSTI and TIOCLINUX: typing into, or taking over, a terminal the process
// can reach (a host whose own terminal the child shares).
RuleStatus DenyTerminalInjection(scmp_filter_ctx ctx);

// EPERM for socket and socketpair of any family but AF_UNIX.
RuleStatus AllowOnlyUnixSockets(scmp_filter_ctx ctx);

// EPERM for a mode with S_ISUID or S_ISGID in chmod, fchmod, fchmodat, mkdir, mkdirat, mknod,
// mknodat, creat, and open/openat with O_CREAT or O_TMPFILE; EPERM for setting extended
// attributes (file capabilities are one); ENOSYS for fchmodat2 and openat2, which carry modes
// the rules above would not see (openat2's behind a pointer).
RuleStatus DenyPrivilegedFileModes(scmp_filter_ctx ctx);

// EPERM for what weakens a file's mode past the setuid/setgid bits: chmod, fchmod
// and fchmodat with S_ISVTX or S_IWOTH; mkdir, mkdirat, mknod and mknodat with S_ISVTX; and a
// umask without 022's bits (the guard sets 022 or stricter before it arms the filter, so what a
// run creates is not world-writable). The mode is checked, not the file: a chmod that keeps an
// existing o+w is refused too, and 600 -> 644 passes (metadata paths:
// docs/threat-model-metadata.md).
RuleStatus DenyWeakenedFileModes(scmp_filter_ctx ctx);

// EPERM for setpriority and ioprio_set on a process group or a user (PRIO_PGRP, PRIO_USER,
// IOPRIO_WHO_PGRP, IOPRIO_WHO_USER: with who 0 they reach every process of the caller's uid).
// Which process they, prlimit64 and the sched_set* calls may target is checked per child
// (guard/signal_filter.hpp: 0 or the process's own pid).
RuleStatus DenyForeignPriorityTargets(scmp_filter_ctx ctx);

// ENOSYS for every system call number below SyscallTableEnd() of the native architecture that
// this libseccomp's table does not name: calls added by newer kernels (listmount,
// open_tree_attr, ...) are refused until the table, and this review, know them. The numbers from
// SyscallTableEnd() up are refused the same way by one comparison that BuildSeccompProgram puts
// first: as a rule each, they were ~570 of a program's ~1,100 instructions, which the kernel
// checks and compiles every time a process loads the filter.
RuleStatus DenyUnknownSystemCalls(scmp_filter_ctx ctx);

// Runtime guard: EPERM for fork, vfork, clone without CLONE_THREAD (threads stay possible),
// execve and execveat, and pidfd_send_signal (its target cannot be checked; kill and friends are
// limited to the process itself by a filter built per child: src/guard/signal_filter.hpp).
RuleStatus DenyProcessCreation(scmp_filter_ctx ctx);

// Runtime guard: EPERM for connect, bind, sendmsg, sendmmsg and sendto with an address. Only
// AF_UNIX sockets exist under the filter, and of those the code needs socketpair (asyncio's
// self-pipe), not a path or an abstract name that could reach a host service.
RuleStatus DenyNetworkAddresses(scmp_filter_ctx ctx);

// Runtime guard: EPERM for SysV IPC (shm*, msg*, sem*) and POSIX message queues (mq_*): their
// objects outlive the run and are shared by every process of the uid (or of the IPC namespace).
// The standard library uses neither (multiprocessing's semaphores are files in /dev/shm).
RuleStatus DenySysvIpcAndMessageQueues(scmp_filter_ctx ctx);

// Runtime guard: EPERM for inotify_init and inotify_init1. Instances are counted per user
// (fs.inotify.max_user_instances, 128 by default), with no rlimit a run could be held under.
RuleStatus DenyInotify(scmp_filter_ctx ctx);

// Runtime guard: EPERM for memfd_create and memfd_secret: pages held in a memfd are outside
// RLIMIT_AS, which is then what bounds a run's memory where no memory cgroup does (with POSIX
// shm, /dev/shm, outside the guard's Landlock paths).
RuleStatus DenyMemoryFiles(scmp_filter_ctx ctx);

// The whole rule set of each filter (on a context whose default action is to allow).
RuleStatus AddLauncherRules(scmp_filter_ctx ctx);
RuleStatus AddGuardRules(scmp_filter_ctx ctx);

// One filter as a BPF program: everything allowed but what `add` adds, other ABIs killing the
// process, system call numbers in a binary tree, and before the tree a native number from
// SyscallTableEnd() up (below the x32 bit) answered with ENOSYS. Empty, with `error` set, when a
// step failed.
std::vector<sock_filter> BuildSeccompProgram(RuleStatus (*add)(scmp_filter_ctx),
                                             std::string& error);

}  // namespace codeact::internal
