// JSON pieces of the execute_code tool: its definitions, its arguments and the tool schemas it
// describes. Kept here so the provider does not depend on the JSON library.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codeact/provider.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

struct SchemaParam {
  std::string name;
  std::string type;  // "string", "integer", "number", "boolean", "array", "object", "any"
  bool required = false;
  std::string description;
};

// Top-level properties of an object schema, in declaration order. A malformed schema gives an
// error, so a broken tool definition is caught when the tool is described, not when it runs.
StatusOr<std::vector<SchemaParam>> SchemaParams(std::string_view schema_json);

// {"code": "..."} -> the code. Missing, non-string, empty or whitespace-only code is an error.
StatusOr<std::string> ParseCodeArgument(std::string_view arguments_json);

// `with_sessions`: the schema has the optional "session" argument (ClientSessions).
std::string ExecuteCodeDefinitionJson(DefinitionFormat format, std::string_view description,
                                      bool with_sessions = false);
// The optional "session" argument of execute_code: nullopt when absent or null; an error when
// it is not a non-empty string of at most 128 bytes.
StatusOr<std::optional<std::string>> ParseSessionArgument(std::string_view arguments_json);

// {"tools":[definition],"instructions":"..."} for `codeact describe`.
std::string DescriptionDocumentJson(std::string_view definition_json,
                                    std::string_view instructions);

// What `codeact describe --measure` says about the environment besides the sizes: the level,
// its environment notes, and what enforces each limit (local_executor.hpp).
struct EnvironmentReport {
  std::string isolation;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> limit_mechanisms;  // limit, mechanism
};

// {"core_chars", "core_tokens_estimate", "details_chars", "details_tokens_estimate",
//  "core_budget_chars", "token_estimate": "characters / 4", "isolation", "environment_notes":
//  [...], "limit_mechanisms": {limit: mechanism}} for `codeact describe --measure`.
std::string DescriptionMeasureJson(std::size_t core_chars, std::size_t core_tokens,
                                   std::size_t details_chars, std::size_t details_tokens,
                                   std::size_t core_budget, const EnvironmentReport& environment);

}  // namespace codeact::internal
