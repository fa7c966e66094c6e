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
  // Replace the default lists when set. `blocked_imports` replaces the default block list:
  // modules that stay blocked under a parent or wildcard entry of the allow list (an exact allow
  // entry beats it; extra_blocked_imports beats everything). The import lists in force reach the
  // runtime guard with each run (Validator::AllowedImports), so the guard follows them.
  std::optional<std::vector<std::string>> allowed_imports;
  std::optional<std::vector<std::string>> blocked_imports;
  std::optional<std::vector<std::string>> blocked_builtins;
  std::optional<std::vector<std::string>> allowed_dunder_attributes;
  // An allow-list of builtins (Microsoft Agent Framework's AllowedBuiltins): when set, every
  // builtin not listed is blocked too; the blocked list in force still wins. Checked by the
  // validator only (a builtin is not a system call the runtime guard could see).
  std::optional<std::vector<std::string>> allowed_builtins;

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

  // The host tools' names: a call of one (or of call_tool) whose coroutine is used without
  // `await` is a violation (rule tool-not-awaited). The provider fills it from the run's
  // snapshot; set it yourself only when validating without a provider.
  std::vector<std::string> tool_names;
};

}  // namespace codeact
