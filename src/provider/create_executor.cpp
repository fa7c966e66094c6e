// CreateExecutor: picks the backend named in the options.
#include "backends/hyperlight/hyperlight_executor.hpp"
#include "backends/local/local_executor.hpp"
#include "codeact/executor.hpp"

namespace codeact {

StatusOr<std::unique_ptr<Executor>> CreateExecutor(const ExecutorOptions& options) {
  switch (options.backend) {
    case BackendKind::kLocal:
      return internal::CreateLocalExecutor(options);
    case BackendKind::kHyperlight:
      return internal::CreateHyperlightExecutor(options);
  }
  return InvalidArgument("unknown backend");
}

}  // namespace codeact
