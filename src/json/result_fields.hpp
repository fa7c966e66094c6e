// The result-field table: one row per field of the result JSON (ToJson(ExecutionResult)), saying
// its name, its JSON type, what it means, how it is written, read back, described in the MCP
// outputSchema and counted in the result's size. ToJson, ExecutionResultFromJson, the
// outputSchema, ResultJsonBytes (the result budget) and docs/result.md walk it, so a new field
// is a member of ExecutionResult and a row in result_fields.cpp.
#pragma once

#include <boost/json.hpp>
#include <cstddef>
#include <functional>
#include <span>
#include <string_view>

#include "codeact/execution.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

struct ResultField {
  std::string_view name;     // the JSON key
  std::string_view type;     // for the docs: "string", "integer or null", ...
  bool schema_required;      // in the outputSchema's "required"
  std::string_view meaning;  // one line for docs/result.md
  std::function<boost::json::value(const ExecutionResult&)> write;
  // Reads the field's value (null when the key is absent) into the result; throws (as
  // boost::json's at() does) when a field the reader needs is missing or of the wrong type.
  std::function<Status(const boost::json::value* value, ExecutionResult&)> read;
  std::function<boost::json::object()> schema;  // the field's JSON schema
  // The field's large part: its bytes beyond what it takes once `clear` emptied it (exactly),
  // and at most (from lengths alone). Null for a field of fixed size.
  std::function<std::size_t(const ExecutionResult&)> large_bytes;
  std::function<void(ExecutionResult&)> clear;
  std::function<std::size_t(const ExecutionResult&)> large_bytes_upper_bound;
};

std::span<const ResultField> ResultFieldTable();

// The outputSchema of execute_code: {"type":"object","properties":{...},"required":[...]}.
boost::json::object ResultSchemaObject();

// The result read back from its JSON object (ExecutionResultFromJson).
StatusOr<ExecutionResult> ResultFromJsonObject(const boost::json::object& object);

// The pieces of the result JSON that other JSON also uses.
boost::json::string JsonText(std::string_view text);  // invalid UTF-8 replaced
boost::json::object ViolationJson(const Violation& violation);
boost::json::object CapturedFileJson(std::string_view path, std::string_view media_type,
                                     std::int64_t size, std::string data_base64);
boost::json::object OmittedFileJson(const OmittedFile& file);
// The final value as the result carries it: the child's JSON text re-serialised, null when it
// does not parse.
boost::json::value OutputValue(const ExecutionResult& result);

}  // namespace codeact::internal
