// Tool definitions in the shape each model API takes (DefinitionFormat), and the strict form of
// a JSON Schema that OpenAI's and Anthropic's strict modes accept.
//
// Strict form: every object lists all its properties under `required` and says
// `additionalProperties: false`; a property that was optional becomes required and nullable
// (its type gains "null", an enum gains null, a schema without a type is wrapped in
// `anyOf [schema, {"type":"null"}]`). A model then sends null for a value it leaves out, so a
// reader of the arguments treats null like absent. A schema the strict modes cannot express (a
// free-form object, `additionalProperties` as a schema, oneOf/allOf, `$ref`) is left as it was and
// its definition says `strict: false`.
#pragma once

#include <string>
#include <string_view>

#include "codeact/provider.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

struct ToolSpec {
  std::string_view name;
  std::string_view description;
  std::string_view input_schema_json;   // a JSON Schema of an object
  std::string_view output_schema_json;  // MCP only; empty: none
};

// The strict form of `schema_json`; an error when the strict modes cannot express it (or it is no
// JSON object).
StatusOr<std::string> StrictSchemaJson(std::string_view schema_json);

// One tool in `format`'s shape:
//   kOpenAI           {"type":"function","function":{"name","description","parameters","strict"}}
//   kOpenAIResponses  {"type":"function","name","description","parameters","strict"}
//   kAnthropic        {"name","description","input_schema","strict"}
//   kMcp              {"name","description","inputSchema","outputSchema"?}  (MCP has no strict)
// The strict formats carry the strict form of the input schema with "strict": true where it has
// one, else the schema as given with "strict": false. A malformed input schema is an error.
StatusOr<std::string> ToolDefinitionJson(DefinitionFormat format, const ToolSpec& tool);

// The JSON Schema of the result JSON (docs/result.md): execute_code's MCP
// outputSchema. It names the fields every result has and their types; new fields are allowed.
const std::string& ExecutionResultSchemaJson();

}  // namespace codeact::internal
