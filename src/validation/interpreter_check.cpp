// The child interpreter must speak the grammar the embedded validator parses.
#include <algorithm>
#include <chrono>
#include <sstream>

#include "codeact/validator.hpp"
#include "process/child.hpp"

namespace codeact {

Status CheckInterpreterMatches(Validator& validator, const std::string& python_path) {
  auto probe = internal::RunCommand(
      {python_path, "-I", "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"}, "",
      std::chrono::seconds(10), 4096);
  if (!probe.ok())
    return FailedPrecondition("cannot run the child interpreter " + python_path + ": " +
                              probe.status().message());
  if (probe->timed_out || !probe->exit.exited || probe->exit.exit_code != 0) {
    return FailedPrecondition("the child interpreter " + python_path +
                              " failed to report its version");
  }
  std::istringstream in(probe->stdout_text);
  PythonVersion child;
  if (!(in >> child.major >> child.minor)) {
    return FailedPrecondition("the child interpreter " + python_path + " printed no version");
  }
  const PythonVersion embedded = validator.EmbeddedVersion();
  if (!(child == embedded)) {
    return FailedPrecondition(
        "the child interpreter " + python_path + " is Python " + std::to_string(child.major) + "." +
        std::to_string(child.minor) + " but the embedded validator is Python " +
        std::to_string(embedded.major) + "." + std::to_string(embedded.minor) +
        "; the grammar differs between minor versions, so use a " + std::to_string(embedded.major) +
        "." + std::to_string(embedded.minor) + " interpreter (--python)");
  }
  return Status::Ok();
}

}  // namespace codeact

namespace codeact {

StatusOr<std::vector<std::string>> Validator::BlockedBuiltins(const ValidationPolicy& policy) {
  if (!policy.blocked_builtins) {
    return FailedPrecondition(
        "this validator does not say which builtins its default policy blocks");
  }
  std::vector<std::string> names = *policy.blocked_builtins;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace codeact
