// SeccompFilter: the system-call filter of the `namespaces` level, applied to the sandboxed
// command. Everything is allowed except (seccomp_rules.hpp has the lists): the calls that
// administer the kernel or reach into other processes (ptrace, process_vm_*, mount and the new
// mount API, pivot_root, chroot, keyctl, bpf, perf_event_open, kexec_*, *_module, io_uring_*,
// userfaultfd, ...), new namespaces (unshare, setns, clone with CLONE_NEW*, clone3), typing
// into a terminal (TIOCSTI), sockets of any family but AF_UNIX, setuid/setgid modes, and system
// calls this build's libseccomp does not know. A denied call fails with EPERM (clone3, fchmodat2,
// openat2 and unknown calls with ENOSYS, so libc falls back or reports it as absent): the code gets
// a clean error and the interpreter goes on. Other architectures' system calls (i386, x32) kill the
// process. The program is compiled at build time (seccomp_programs.hpp).
#pragma once

namespace codeact::internal {

// Loads the filter for the calling thread and its future children; fails the start otherwise.
void InstallSeccompFilter();

}  // namespace codeact::internal
