#include "json/definitions.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <stdexcept>

#include "json/serialize.hpp"
#include "json/tool_formats.hpp"

namespace codeact::internal {
namespace json = boost::json;

StatusOr<std::vector<SchemaParam>> SchemaParams(std::string_view schema_json) {
  json::error_code ec;
  const json::value v = json::parse(schema_json, ec);
  if (ec || !v.is_object()) return InvalidArgument("the parameters schema is not a JSON object");
  std::vector<SchemaParam> params;
  const json::object& schema = v.as_object();
  const json::value* props = schema.if_contains("properties");
  if (props == nullptr) return params;
  if (!props->is_object()) return InvalidArgument("the schema's \"properties\" must be an object");
  std::vector<std::string> required;
  if (const json::value* req = schema.if_contains("required"); req && req->is_array()) {
    for (const auto& r : req->as_array()) {
      if (r.is_string()) required.emplace_back(r.as_string());
    }
  }
  for (const auto& [name, spec] : props->as_object()) {
    SchemaParam p;
    p.name = name;
    p.type = "any";
    if (spec.is_object()) {
      if (const json::value* t = spec.as_object().if_contains("type"); t && t->is_string())
        p.type = t->as_string();
      if (const json::value* d = spec.as_object().if_contains("description"); d && d->is_string()) {
        p.description = d->as_string();
      }
    }
    p.required = std::find(required.begin(), required.end(), p.name) != required.end();
    params.push_back(std::move(p));
  }
  return params;
}

StatusOr<std::string> ParseCodeArgument(std::string_view arguments_json) {
  json::error_code ec;
  const json::value v = ParseJson(arguments_json, ec);
  if (ec == json::error::too_deep)
    return InvalidArgument("arguments are too deeply nested: " + JsonErrorText(ec));
  if (ec) return InvalidArgument("arguments are not valid JSON: " + ec.message());
  if (!v.is_object())
    return InvalidArgument("arguments must be a JSON object with a \"code\" string");
  const json::value* code = v.as_object().if_contains("code");
  if (code == nullptr) return InvalidArgument("missing required argument \"code\"");
  if (!code->is_string()) return InvalidArgument("argument \"code\" must be a string");
  std::string text(code->as_string());
  if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
    return InvalidArgument("argument \"code\" is empty");
  }
  return text;
}

StatusOr<std::optional<std::string>> ParseSessionArgument(std::string_view arguments_json) {
  json::error_code ec;
  const json::value v = ParseJson(arguments_json, ec);
  if (ec || !v.is_object()) return std::optional<std::string>();  // ParseCodeArgument says why
  const json::value* session = v.as_object().if_contains("session");
  if (session == nullptr || session->is_null()) return std::optional<std::string>();
  if (!session->is_string()) return InvalidArgument("argument \"session\" must be a string");
  std::string name(session->as_string());
  if (name.empty()) return InvalidArgument("argument \"session\" must not be empty");
  if (name.size() > 128) return InvalidArgument("argument \"session\" has at most 128 bytes");
  return std::optional<std::string>(std::move(name));
}

std::string ExecuteCodeDefinitionJson(DefinitionFormat format, std::string_view description,
                                      bool with_sessions) {
  json::object properties{{"code", json::object{{"type", "string"},
                                                {"description",
                                                 "Python source to run. Top-level "
                                                 "await works; the value of a final "
                                                 "bare expression is returned."}}}};
  if (with_sessions) {
    properties["session"] = json::object{
        {"type", "string"},
        {"description",
         "Optional. A name for a persistent interpreter: use the same name to keep variables, "
         "imports and files between calls; a new name starts a new one. Without it, every call "
         "starts fresh. A session unused for a while expires (the result's session_state is then "
         "\"new\" again)."}};
  }
  const json::object schema{{"type", "object"},
                            {"properties", std::move(properties)},
                            {"required", json::array{"code"}},
                            {"additionalProperties", false}};
  const std::string schema_json = SerializeJson(schema);
  auto definition = ToolDefinitionJson(
      format, ToolSpec{ExecuteCodeFunction::kName, description, schema_json,
                       format == DefinitionFormat::kMcp ? ExecutionResultSchemaJson() : ""});
  // The schema above is well-formed: a failure is a broken invariant of this file.
  if (!definition.ok()) throw std::logic_error(definition.status().message());
  return *definition;
}

std::string DescriptionDocumentJson(std::string_view definition_json,
                                    std::string_view instructions) {
  return SerializeJson(json::object{{"tools", json::array{json::parse(definition_json)}},
                                    {"instructions", instructions}});
}

std::string DescriptionMeasureJson(std::size_t core_chars, std::size_t core_tokens,
                                   std::size_t details_chars, std::size_t details_tokens,
                                   std::size_t core_budget, const EnvironmentReport& environment) {
  json::array notes;
  for (const auto& n : environment.notes) notes.emplace_back(n);
  json::object mechanisms;
  for (const auto& [limit, mechanism] : environment.limit_mechanisms) mechanisms[limit] = mechanism;
  return SerializeJson(json::object{{"core_chars", core_chars},
                                    {"core_tokens_estimate", core_tokens},
                                    {"details_chars", details_chars},
                                    {"details_tokens_estimate", details_tokens},
                                    {"core_budget_chars", core_budget},
                                    {"token_estimate", "characters / 4, rounded up"},
                                    {"isolation", environment.isolation},
                                    {"environment_notes", std::move(notes)},
                                    {"limit_mechanisms", std::move(mechanisms)}});
}

}  // namespace codeact::internal
