// SeccompFilter: the system-call filter of the `namespaces` level, built with libseccomp (the
// only user of libseccomp). Everything is allowed except: the calls that administer the kernel
// or reach into other processes (ptrace, process_vm_*, mount and the new mount API, pivot_root,
// chroot, keyctl, bpf, perf_event_open, kexec_*, *_module, io_uring_*, userfaultfd, ...), new
// namespaces (unshare, setns, clone with CLONE_NEW*, clone3), and sockets of any family but
// AF_UNIX. A denied call fails with EPERM (clone3 with ENOSYS, so libc falls back to clone):
// the code gets a clean error and the interpreter goes on. Other architectures' system calls
// (i386, x32) kill the process.
#pragma once

namespace codeact::internal {

// Loads the filter for the calling thread and its future children; fails the start otherwise.
void InstallSeccompFilter();

}  // namespace codeact::internal
