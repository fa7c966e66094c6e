#include "sandbox/seccomp_programs.hpp"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace codeact::internal {
namespace {

// kLauncherProgram and kGuardProgram, written by codeact-seccomp-gen.
#include "seccomp_programs.inc"

}  // namespace

SeccompProgram LauncherSeccompProgram() {
  return {kLauncherProgram, sizeof kLauncherProgram / sizeof kLauncherProgram[0]};
}

SeccompProgram GuardSeccompProgram() {
  return {kGuardProgram, sizeof kGuardProgram / sizeof kGuardProgram[0]};
}

int LoadSeccompProgram(SeccompProgram program, bool all_threads) {
  if (program.length == 0 || program.length > BPF_MAXINSNS) return EINVAL;
  sock_fprog prog{static_cast<unsigned short>(program.length),
                  const_cast<sock_filter*>(program.filter)};
  const long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                            all_threads ? SECCOMP_FILTER_FLAG_TSYNC : 0, &prog);
  if (rc == 0) return 0;
  return rc > 0 ? ESRCH : errno;  // TSYNC answers with the id of a thread it could not sync
}

}  // namespace codeact::internal
