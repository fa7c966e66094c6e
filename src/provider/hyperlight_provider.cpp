#include "codeact/hyperlight_provider.hpp"

namespace codeact {

StatusOr<std::shared_ptr<CodeActProvider>> HyperlightCodeActProvider::Create(
    ProviderOptions options) {
  options.executor.backend = BackendKind::kHyperlight;
  if (options.executor.isolation == IsolationLevel::kAuto)
    options.executor.isolation = IsolationLevel::kMicroVm;
  if (options.executor.isolation != IsolationLevel::kMicroVm) {
    return InvalidArgument("HyperlightCodeActProvider runs at the microvm isolation level only");
  }
  return CodeActProvider::Create(std::move(options));
}

}  // namespace codeact
