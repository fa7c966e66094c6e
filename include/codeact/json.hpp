// String-level JSON for the public types, so no JSON library appears in a public header.
#pragma once

#include <string>
#include <string_view>

#include "codeact/execution.hpp"
#include "codeact/policy.hpp"
#include "codeact/status.hpp"
#include "codeact/validator.hpp"

namespace codeact {

// {"ok":bool,"violations":[{"line","col","rule","message","hint"}]}
std::string ToJson(const ValidationReport& report);

// The result contract of docs/result.md (files carry data_base64).
std::string ToJson(const ExecutionResult& result);
StatusOr<ExecutionResult> ExecutionResultFromJson(std::string_view json);

// {"allowed_imports":[...], "blocked_builtins":[...], "allowed_dunder_attributes":[...],
//  "extra_allowed_imports":[...], "extra_blocked_imports":[...], "allow_dynamic_format":bool,
//  "max_code_bytes":N, "max_ast_depth":N, "validation_timeout_ms":N}; every key optional,
// unknown keys rejected so a typo never weakens a policy silently.
StatusOr<ValidationPolicy> PolicyFromJson(std::string_view json);
std::string ToJson(const ValidationPolicy& policy);

}  // namespace codeact
