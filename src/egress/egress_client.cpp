// EgressClient in the library: the egress module (egress/egress_module_api.hpp) loaded when the
// first client is made, once per process; each client forwards to one of the module's.
#include <mutex>

#include "common/data_dir.hpp"
#include "common/loadable_module.hpp"
#include "egress/egress_module_api.hpp"
#include "egress/http_client.hpp"

namespace codeact::internal {
namespace {

StatusOr<const EgressModuleApi*> Module() {
  static std::once_flag once;
  static StatusOr<const EgressModuleApi*> api = Unavailable("not loaded");
  std::call_once(once, [] {
    auto table = LoadModuleTable(EgressModulePath(), CODEACT_EGRESS_MODULE_ENTRY,
                                 "the egress module codeact_egress.so", "CODEACT_EGRESS_MODULE",
                                 kEgressModuleAbi, /*global=*/false);
    if (table.ok()) {
      api = static_cast<const EgressModuleApi*>(*table);
    } else {
      api = table.status();
    }
  });
  return api;
}

}  // namespace

EgressClient::EgressClient(EgressClientOptions options) : options_(std::move(options)) {
  auto api = Module();
  if (!api.ok()) {
    unavailable_ = api.status();
    return;
  }
  api_ = *api;
  client_ = api_->create(options_);
}

EgressClient::~EgressClient() {
  if (client_ != nullptr) api_->destroy(client_);
}

StatusOr<EgressResponse> EgressClient::Fetch(const EgressRequest& request,
                                             const CancellationToken& cancel) const {
  if (client_ == nullptr) return Unavailable("egress: " + unavailable_.message());
  return api_->fetch(client_, request, cancel);
}

}  // namespace codeact::internal
