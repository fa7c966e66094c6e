#include "codeact/hyperlight_provider.hpp"

namespace codeact {

StatusOr<std::shared_ptr<HyperlightCodeActProvider>> HyperlightCodeActProvider::Create(
    ProviderOptions options) {
  options.executor.backend = BackendKind::kHyperlight;
  if (options.executor.isolation == IsolationLevel::kAuto) options.executor.isolation = IsolationLevel::kMicroVm;
  if (options.executor.isolation != IsolationLevel::kMicroVm) {
    return InvalidArgument("HyperlightCodeActProvider runs at the microvm isolation level only");
  }
  auto validator = Validator::Embedded();
  if (!validator.ok()) return validator.status();
  auto executor = CreateExecutor(options.executor);
  if (!executor.ok()) return executor.status();
  return std::shared_ptr<HyperlightCodeActProvider>(new HyperlightCodeActProvider(
      std::move(options), std::move(*validator), std::move(*executor)));
}

}  // namespace codeact
