// Tool arguments checked against the tool's JSON Schema (draft 7) before its handler runs, with
// Debian's valijson; the bridge answers a mismatch with ToolError "ToolArgumentsInvalid" naming
// the field, and the handler never sees the call.
//
// Compiled schemas are cached process-wide by their text (at most kSchemaCacheEntries; the
// cache is emptied when full). A schema valijson cannot compile (malformed, a remote `$ref`)
// fails every call of its tool with ToolError "ToolSchemaInvalid" rather than let arguments
// through unchecked. `pattern` runs std::regex, whose matching recurses once per character: a
// string over kMaxPatternCheckedBytes under a schema with a pattern is refused rather than risk
// the host's stack.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace codeact::internal {

inline constexpr std::size_t kSchemaCacheEntries = 256;
inline constexpr std::size_t kMaxPatternCheckedBytes = 8 * 1024;

struct SchemaProblem {
  std::string error_type;  // "ToolArgumentsInvalid" or "ToolSchemaInvalid"
  std::string message;     // names the field: `argument "a": ...`
};

// Nothing when `arguments` satisfy `schema_json`, or when no schema was declared (empty text).
std::optional<SchemaProblem> CheckArguments(std::string_view schema_json,
                                            const boost::json::value& arguments);

}  // namespace codeact::internal
