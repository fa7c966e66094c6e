#include "provider/result_stamp.hpp"

#include <string>

namespace codeact::internal {

void StampBackend(ExecutionResult& result, const Executor& executor) {
  if (result.backend.empty()) result.backend = std::string(BackendName(executor.backend()));
  if (result.isolation.empty()) {
    result.isolation = std::string(IsolationName(executor.isolation()));
  }
}

}  // namespace codeact::internal
