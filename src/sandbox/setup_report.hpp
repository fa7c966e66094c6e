// SetupReport: how the sandbox launcher tells the host which containment step failed. One
// {"type":"setup_error","step":...,"errno":...,"message":...} frame goes to the bridge (fd 4)
// before the runner could send its "ready" frame, and the process exits with
// kSandboxSetupFailedExit. Every step of the checklist goes through Must().
#pragma once

#include <string>

namespace codeact::internal {

[[noreturn]] void FailStep(const std::string& step, int err, const std::string& detail = "");

// Fails the start when `ok` is false, with errno as the reason.
inline void Must(bool ok, const std::string& step) {
  if (!ok) FailStep(step, errno);
}

}  // namespace codeact::internal
