// What the hyperlight tests share: a provider on the fake SDK (tests/fakes), options without the
// validator, and files to give it.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "codeact/hyperlight_provider.hpp"

namespace codeact::testing {

inline const std::string kFakeSdk = std::string(CODEACT_SOURCE_DIR) + "/tests/fakes";

inline std::shared_ptr<CodeActProvider> FakeProvider(ProviderOptions options = {}) {
  options.executor.hyperlight.sdk_path = kFakeSdk;
  auto provider = HyperlightCodeActProvider::Create(std::move(options));
  if (!provider.ok()) throw std::runtime_error(provider.status().ToString());
  return *provider;
}

// The tests read the fake's own builtins, os.getpid() and the worker's limits: not what the
// validator is there for.
inline ProviderOptions Unvalidated() {
  ProviderOptions o;
  o.validate = false;
  return o;
}

inline std::string MakeDir(const std::string& path) {
  std::filesystem::create_directories(path);
  return path;
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace codeact::testing
