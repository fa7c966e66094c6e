#include "sandbox/seccomp_filter.hpp"

#include "sandbox/seccomp_programs.hpp"
#include "sandbox/setup_report.hpp"

namespace codeact::internal {

void InstallSeccompFilter() {
  // The launcher's command is single-threaded here (it is about to exec).
  if (int err = LoadSeccompProgram(LauncherSeccompProgram(), /*all_threads=*/false); err != 0) {
    FailStep("seccomp filter", err);
  }
}

}  // namespace codeact::internal
