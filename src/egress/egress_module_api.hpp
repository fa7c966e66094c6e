// The seam to the egress module (codeact_egress.so, built from http_client.cpp): the TLS client
// behind EgressClient. OpenSSL is linked by that module alone, which the runtime loads when the
// first EgressClient is made (a run with network targets), not with every program that links the
// library: loading libssl and libcrypto took ~3.5 ms of every start of `codeact` on the 2-core
// test VM, a sixth of a bare interpreter start, on the critical path of a one-shot run that has
// no use for them. Both sides are built by one build and share the C++ runtime, so the table
// passes C++ types; kEgressModuleAbi changes whenever it changes.
#pragma once

#include "codeact/cancellation.hpp"
#include "codeact/status.hpp"
#include "egress/http_client.hpp"

namespace codeact::internal {

inline constexpr int kEgressModuleAbi = 2;

struct EgressModuleApi {
  int abi = kEgressModuleAbi;  // first: the loader checks it (common/loadable_module.hpp)
  void* (*create)(const EgressClientOptions& options);  // never null
  void (*destroy)(void* client);
  StatusOr<EgressResponse> (*fetch)(const void* client, const EgressRequest& request,
                                    const CancellationToken& cancel);
};

}  // namespace codeact::internal

// The module's one exported symbol.
#define CODEACT_EGRESS_MODULE_ENTRY "codeact_egress_module_api"
extern "C" const codeact::internal::EgressModuleApi* codeact_egress_module_api();
