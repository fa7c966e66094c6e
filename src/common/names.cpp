// Names of the public enums, as they appear in the result JSON and on the command line.
#include "codeact/execution.hpp"
#include "codeact/executor.hpp"

namespace codeact {

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kError:
      return "error";
    case Outcome::kValidationFailed:
      return "validation_failed";
    case Outcome::kApprovalRequired:
      return "approval_required";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kMemoryLimit:
      return "memory_limit";
    case Outcome::kCpuLimit:
      return "cpu_limit";
    case Outcome::kOutputLimit:
      return "output_limit";
    case Outcome::kDiskLimit:
      return "disk_limit";
    case Outcome::kKilled:
      return "killed";
    case Outcome::kSetupError:
      return "setup_error";
    case Outcome::kUnavailable:
      return "unavailable";
    case Outcome::kCancelled:
      return "cancelled";
    case Outcome::kInternalError:
      return "internal_error";
  }
  return "internal_error";
}

std::string_view OutputStreamKindName(OutputStreamKind kind) {
  return kind == OutputStreamKind::kStderr ? "stderr" : "stdout";
}

std::string_view SessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kNew:
      return "new";
    case SessionState::kKept:
      return "kept";
    case SessionState::kRestarted:
      return "restarted";
  }
  return "new";
}

std::string_view BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kLocal:
      return "local";
    case BackendKind::kHyperlight:
      return "hyperlight";
  }
  return "unknown";
}

std::string_view IsolationName(IsolationLevel level) {
  switch (level) {
    case IsolationLevel::kProcess:
      return "process";
    case IsolationLevel::kNamespaces:
      return "namespaces";
    case IsolationLevel::kMicroVm:
      return "microvm";
    case IsolationLevel::kAuto:
      break;
  }
  return "auto";
}

ExecutionResult NotRunResult(Outcome outcome, std::string message) {
  ExecutionResult result;
  result.outcome = outcome;
  result.exit_code = -1;
  result.message = std::move(message);
  return result;
}

}  // namespace codeact
