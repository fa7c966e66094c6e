// FakeValidator: the one fake Validator, for the tests of what sits around validation (the MCP
// server, the provider) without Python. It refuses code that mentions `refused_snippet` with
// one `import-blocked` violation and accepts the rest; its allowed imports are `allowed_imports`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codeact/validator.hpp"

namespace codeact::testing {

class FakeValidator final : public Validator {
 public:
  ValidationReport Validate(std::string_view code, const ValidationPolicy&) override {
    ValidationReport r;
    if (code.find(refused_snippet) != std::string_view::npos) {
      r.ok = false;
      r.violations.push_back({1, 0, "import-blocked", refused_message, "use the mounts"});
    }
    return r;
  }
  StatusOr<std::vector<std::string>> AllowedImports(const ValidationPolicy&) override {
    return allowed_imports;
  }
  PythonVersion EmbeddedVersion() const override { return {3, 11}; }
  std::string InstallationInterpreter() const override { return "/usr/bin/python3.11"; }

  std::string refused_snippet = "import os";
  std::string refused_message = "import of \"os\" is not allowed";
  std::vector<std::string> allowed_imports = {"math"};
};

}  // namespace codeact::testing
