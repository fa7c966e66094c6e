// ValidationPolicy: what the AST validator allows. Defaults live in the Python package
// (validator/policy.py) so there is one source of truth; a list set here replaces the default
// list, and the extra_* lists adjust whichever list is in force.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace codeact {

struct ValidationPolicy {
  // Replace the default lists when set.
  std::optional<std::vector<std::string>> allowed_imports;
  std::optional<std::vector<std::string>> blocked_builtins;
  std::optional<std::vector<std::string>> allowed_dunder_attributes;

  // Adjust the list in force (default or replaced). A blocked import wins over an allowed one.
  std::vector<std::string> extra_allowed_imports;
  std::vector<std::string> extra_blocked_imports;

  // str.format / format_map with a template that is not a literal.
  bool allow_dynamic_format = false;

  // The functions through which the run reaches its network targets (`http_get`, ...): the
  // provider sets them from its backend (BackendTraits::network_tools) when the run has
  // targets, and the hint for a rejected network module (socket, urllib, http.client, ...)
  // names them. Empty: the hint says there is no network.
  std::vector<std::string> network_tools;

  std::int64_t max_code_bytes = 64 * 1024;
  std::int32_t max_ast_depth = 100;
  std::int64_t validation_timeout_ms = 10'000;
};

}  // namespace codeact
