// The content of a tools/call result of execute_code (MCP "Tool Result"): one text block holding
// the result JSON serialised, as the spec recommends for a tool that returns structuredContent,
// then one embedded resource per captured file.
//
// - The text is the result JSON (docs/result.md) with each file's `data_base64`
//   replaced by `resource`, the URI of its embedded resource: bytes never travel inside the text.
// - Past `max_text_bytes` the text is trimmed: stdout, stderr and the traceback keep their first
//   and last parts around a marker saying how many bytes were left out, an output value whose
//   JSON is long becomes the start of that JSON as a string, and a `summary` field says what was
//   trimmed and that structuredContent holds the whole result.
// - A successful run with nothing to show gets `summary` kNoOutputSummary in the text (only).
// - Files: {"type":"resource","resource":{"uri":"file:///out/a.csv","mimeType":...,
//   "text"|"blob"}}: `text` for a text/* or JSON file that is valid UTF-8, `blob` (base64) else.
#pragma once

#include <boost/json/array.hpp>
#include <cstddef>
#include <string>

#include "codeact/execution.hpp"

namespace codeact::internal {

inline constexpr std::size_t kDefaultMaxTextContentBytes = 16 * 1024;
// The text's `summary` for a successful run with no stdout, stderr, output value or file.
inline constexpr const char* kNoOutputSummary = "Code executed successfully without output.";

// The `content` array for `result`, whose JSON (ToJson) is `result_json`.
boost::json::array McpResultContent(const ExecutionResult& result, const std::string& result_json,
                                    std::size_t max_text_bytes);

// "file:///out/a%20b.csv" for "/out/a b.csv".
std::string FileUri(const std::string& path);

}  // namespace codeact::internal
