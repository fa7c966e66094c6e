// HyperlightCodeActProvider: the CodeAct provider on the hyperlight backend — the code runs in a
// Hyperlight micro-VM (CPython compiled to Wasm, through the hyperlight-sandbox Python SDK)
// instead of a child process. Same registries, snapshot, fingerprint, approval, validation,
// result JSON and `execute_code` definition as LocalCodeActProvider (provider.hpp).
//
// What differs: the code sees its inputs (host directories and files) read-only at /input
// (ExecutorOptions::hyperlight.inputs, staged flat) and its files written under /output come back
// in `files`; both are flat (no subdirectories); there are no other mounts (a run with mounts is a
// setup_error). Network access is limited to the targets added with AddNetworkTarget, in the
// grammar both backends share: "https://HOST[:PORT]", "http://HOST[:PORT]" or a bare "HOST"
// (https, port 443), optionally followed by ":GET,POST"; a target outside it makes runs a
// setup_error. The code reaches them with `await http_get(url)` / `await http_post(url, ...)`.
// Results say backend "hyperlight", isolation "microvm".
//
// Creating the provider never probes the machine: when the SDK, its Python guest or a working
// hypervisor (/dev/kvm or /dev/mshv with hardware virtualisation) is missing, each run returns
// outcome `unavailable` with the reason, quickly. Install: see docs/hyperlight.md.
#pragma once

#include <memory>

#include "codeact/provider.hpp"

namespace codeact {

// CodeActProvider::Create on the hyperlight backend.
struct HyperlightCodeActProvider {
  // `options.executor.backend` is set to kHyperlight; `options.executor.hyperlight` holds the
  // input directory and, for tests only, the path of a fake SDK.
  static StatusOr<std::shared_ptr<CodeActProvider>> Create(ProviderOptions options = {});
};

}  // namespace codeact
