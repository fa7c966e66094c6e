// Validator's one member defined out of line, and so its key function: the class's vtable is
// emitted here, in the library and in the codeact_python module alike (embedded_python_api.hpp).
#include <algorithm>

#include "codeact/validator.hpp"

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
