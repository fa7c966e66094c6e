// Names of the public enums, as they appear in the result JSON and on the command line.
#include "common/names.hpp"

namespace codeact {

std::string_view OutcomeName(Outcome outcome) { return internal::kOutcomeNames.Name(outcome); }

std::string_view OutputStreamKindName(OutputStreamKind kind) {
  return kind == OutputStreamKind::kStderr ? "stderr" : "stdout";
}

std::string_view SessionStateName(SessionState state) {
  return internal::kSessionStateNames.Name(state);
}

std::string_view BackendName(BackendKind kind) { return internal::kBackendNames.Name(kind); }

std::string_view IsolationName(IsolationLevel level) {
  return internal::kIsolationNames.Name(level);
}

ExecutionResult NotRunResult(Outcome outcome, std::string message) {
  ExecutionResult result;
  result.outcome = outcome;
  result.exit_code = -1;
  result.message = std::move(message);
  return result;
}

}  // namespace codeact
