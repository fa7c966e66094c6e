// SeccompPrograms: codeact's two system-call filters as classic BPF programs, and loading one.
//
// Both are generated at BUILD time by codeact-seccomp-gen (seccomp_gen_main.cpp) from the rules
// of seccomp_rules.hpp with this build's libseccomp, and compiled in as constants. Generating
// them at run time was measured on the 2-core test VM: refusing the ~650 system call numbers
// libseccomp does not know takes it 15-25 ms per filter, as long as an interpreter start; the
// finished program loads in ~0.5-1 ms (the kernel's own work). Programs are for the native
// architecture; calls of other ABIs (i386, x32) kill the process.
#pragma once

#include <linux/filter.h>

#include <cstddef>

namespace codeact::internal {

struct SeccompProgram {
  const sock_filter* filter = nullptr;
  std::size_t length = 0;  // instructions
};

// The launcher's filter (namespaces level): seccomp_rules.hpp AddLauncherRules.
SeccompProgram LauncherSeccompProgram();
// The runtime guard's filter (every level): AddGuardRules.
SeccompProgram GuardSeccompProgram();

// Loads `program` for the calling thread, or for every thread of the process with
// `all_threads` (SECCOMP_FILTER_FLAG_TSYNC). no_new_privs must be set. Returns 0 or an errno
// (ESRCH when another thread could not be synchronised). Async-signal-safe.
int LoadSeccompProgram(SeccompProgram program, bool all_threads);

}  // namespace codeact::internal
