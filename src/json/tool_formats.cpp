// Tool definitions per model API and the strict form of a schema (tool_formats.hpp).
#include "json/tool_formats.hpp"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <utility>

#include "json/result_fields.hpp"
#include "json/serialize.hpp"

namespace codeact {

namespace {
constexpr std::array<std::pair<DefinitionFormat, std::string_view>, 4> kFormatNames = {{
    {DefinitionFormat::kOpenAI, "openai"},
    {DefinitionFormat::kOpenAIResponses, "openai-responses"},
    {DefinitionFormat::kAnthropic, "anthropic"},
    {DefinitionFormat::kMcp, "mcp"},
}};
}  // namespace

std::string_view DefinitionFormatName(DefinitionFormat format) {
  for (const auto& [f, name] : kFormatNames) {
    if (f == format) return name;
  }
  return "openai";
}

std::optional<DefinitionFormat> ParseDefinitionFormat(std::string_view name) {
  for (const auto& [f, n] : kFormatNames) {
    if (n == name) return f;
  }
  return std::nullopt;
}

}  // namespace codeact

namespace codeact::internal {
namespace json = boost::json;
namespace {

// How deep the conversion follows nested schemas; deeper is left non-strict.
constexpr int kMaxStrictDepth = 32;

bool MakeStrict(json::value& schema, int depth);

// `property` becomes nullable: null is one more value it accepts.
void MakeNullable(json::value& property) {
  if (!property.is_object()) return;
  json::object& o = property.as_object();
  json::value* type = o.if_contains("type");
  const bool no_other_form = !o.contains("anyOf") && !o.contains("const");
  if (type != nullptr && type->is_string() && no_other_form) {
    if (type->as_string() == "null") return;
    json::array types;
    types.emplace_back(type->as_string());
    types.emplace_back("null");
    *type = std::move(types);
  } else if (type != nullptr && type->is_array() && no_other_form) {
    json::array& types = type->as_array();
    if (std::find(types.begin(), types.end(), json::value("null")) == types.end())
      types.emplace_back("null");
  } else {
    json::object wrapped;
    if (json::value* d = o.if_contains("description")) wrapped["description"] = *d;
    json::array branches;
    branches.emplace_back(std::move(property));
    branches.emplace_back(json::object{{"type", "null"}});
    wrapped["anyOf"] = std::move(branches);
    property = std::move(wrapped);
    return;
  }
  if (json::value* values = o.if_contains("enum"); values != nullptr && values->is_array()) {
    json::array& list = values->as_array();
    if (std::find(list.begin(), list.end(), json::value(nullptr)) == list.end())
      list.emplace_back(nullptr);
  }
}

bool MakeObjectStrict(json::object& o, int depth) {
  json::value* props = o.if_contains("properties");
  if (props == nullptr || !props->is_object()) return false;  // free-form: no strict form
  if (const json::value* extra = o.if_contains("additionalProperties");
      extra != nullptr && !(extra->is_bool() && !extra->as_bool())) {
    return false;  // extra keys allowed or typed: strict modes refuse both
  }
  o["additionalProperties"] = false;
  std::vector<std::string> required;
  if (const json::value* r = o.if_contains("required"); r != nullptr && r->is_array()) {
    for (const auto& name : r->as_array()) {
      if (name.is_string()) required.emplace_back(name.as_string());
    }
  }
  json::array all;
  for (auto& [name, property] : props->as_object()) {
    if (!MakeStrict(property, depth + 1)) return false;
    if (std::find(required.begin(), required.end(), std::string(name)) == required.end())
      MakeNullable(property);
    all.emplace_back(name);
  }
  o["required"] = std::move(all);
  return true;
}

bool MakeStrict(json::value& schema, int depth) {
  if (depth > kMaxStrictDepth || !schema.is_object()) return false;
  json::object& o = schema.as_object();
  for (std::string_view refused : {"oneOf", "allOf", "$ref", "not", "patternProperties"}) {
    if (o.contains(refused)) return false;
  }
  if (json::value* any = o.if_contains("anyOf")) {
    if (!any->is_array()) return false;
    for (auto& branch : any->as_array()) {
      if (!MakeStrict(branch, depth + 1)) return false;
    }
  }
  if (json::value* items = o.if_contains("items")) {
    if (!MakeStrict(*items, depth + 1)) return false;
  }
  const json::value* type = o.if_contains("type");
  bool is_object = o.contains("properties");
  if (type != nullptr && type->is_string()) is_object = is_object || type->as_string() == "object";
  if (type != nullptr && type->is_array()) {
    const auto& types = type->as_array();
    is_object =
        is_object || std::find(types.begin(), types.end(), json::value("object")) != types.end();
  }
  if (is_object) return MakeObjectStrict(o, depth);
  return true;
}

StatusOr<json::value> ParseSchema(std::string_view schema_json) {
  json::error_code ec;
  json::value schema = ParseJson(schema_json, ec);
  if (ec) return InvalidArgument("the tool's schema is not valid JSON: " + JsonErrorText(ec));
  if (!schema.is_object()) return InvalidArgument("the tool's schema is not a JSON object");
  return schema;
}

}  // namespace

StatusOr<std::string> StrictSchemaJson(std::string_view schema_json) {
  auto schema = ParseSchema(schema_json);
  if (!schema.ok()) return schema.status();
  if (!MakeStrict(*schema, 0)) {
    return InvalidArgument(
        "the schema has no strict form (a free-form object, typed additionalProperties, "
        "oneOf/allOf/not, $ref, or nesting deeper than 32)");
  }
  return SerializeJson(*schema);
}

StatusOr<std::string> ToolDefinitionJson(DefinitionFormat format, const ToolSpec& tool) {
  auto schema = ParseSchema(tool.input_schema_json);
  if (!schema.ok()) return schema.status();
  if (format == DefinitionFormat::kMcp) {
    json::object out{{"name", tool.name},
                     {"description", tool.description},
                     {"inputSchema", std::move(*schema)}};
    if (!tool.output_schema_json.empty()) {
      auto output = ParseSchema(tool.output_schema_json);
      if (!output.ok()) return output.status();
      out["outputSchema"] = std::move(*output);
    }
    return SerializeJson(out);
  }
  json::value strict = *schema;
  const bool is_strict = MakeStrict(strict, 0);
  json::value parameters = is_strict ? std::move(strict) : std::move(*schema);
  switch (format) {
    case DefinitionFormat::kOpenAI:
      return SerializeJson(json::object{{"type", "function"},
                                        {"function", json::object{{"name", tool.name},
                                                                  {"description", tool.description},
                                                                  {"parameters", parameters},
                                                                  {"strict", is_strict}}}});
    case DefinitionFormat::kOpenAIResponses:
      return SerializeJson(json::object{{"type", "function"},
                                        {"name", tool.name},
                                        {"description", tool.description},
                                        {"parameters", parameters},
                                        {"strict", is_strict}});
    case DefinitionFormat::kAnthropic:
      return SerializeJson(json::object{{"name", tool.name},
                                        {"description", tool.description},
                                        {"input_schema", parameters},
                                        {"strict", is_strict}});
    case DefinitionFormat::kMcp:
      break;
  }
  return Internal("unknown definition format");
}

const std::string& ExecutionResultSchemaJson() {
  // From the result-field table (json/result_fields.hpp), as ToJson writes the result.
  static const std::string schema = SerializeJson(ResultSchemaObject());
  return schema;
}

}  // namespace codeact::internal
