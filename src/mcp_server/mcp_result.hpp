// The content of a tools/call result of execute_code (MCP "Tool Result"): one text block holding
// the result JSON serialised, as the spec recommends for a tool that returns structuredContent,
// then one block per captured file.
//
// - The text is the result JSON (docs/result.md) with each file's `data_base64` replaced by
//   where its bytes went: `resource` (the URI of its block), or `shown_as: "image"`. Bytes never
//   travel inside the text.
// - Past `max_text_bytes` the text is trimmed: stdout, stderr and the traceback keep their first
//   and last parts around a marker saying how many bytes were left out, an output value whose
//   JSON is long becomes the start of that JSON as a string, and a `summary` field says what was
//   trimmed and that structuredContent holds the whole result.
// - A successful run with nothing to show gets `summary` kNoOutputSummary in the text (only).
// - Files whose bytes are an image (image_sniff.hpp; the extension does not count), while their
//   sizes together stay within `max_image_bytes`: {"type":"image","data":base64,"mimeType":...}.
// - Other files, with `keep` (a server's McpFileStore): {"type":"resource_link","uri":...,
//   "name":path,"mimeType":...,"size":bytes}, readable with resources/read while kept; a file
//   `keep` refuses (over the store's caps) has no block, and its text entry says so.
// - Without `keep`: {"type":"resource","resource":{"uri":"file:///out/a.csv","mimeType":...,
//   "text"|"blob"}}: `text` for a text/* or JSON file that is valid UTF-8, `blob` (base64) else.
#pragma once

#include <boost/json/array.hpp>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "codeact/execution.hpp"

namespace codeact::internal {

inline constexpr std::size_t kDefaultMaxTextContentBytes = 16 * 1024;
// The raw bytes of all image blocks of one result together; past it an image is linked instead.
inline constexpr std::size_t kDefaultMaxImageContentBytes = 2u << 20;
// The text's `summary` for a successful run with no stdout, stderr, output value or file.
inline constexpr const char* kNoOutputSummary = "Code executed successfully without output.";

// Keeps a file for resources/read: its URI, or nothing when it cannot be kept.
using McpKeepFile = std::function<std::optional<std::string>(const CapturedFile& file)>;

struct McpContentOptions {
  std::size_t max_text_bytes = kDefaultMaxTextContentBytes;
  std::size_t max_image_bytes = kDefaultMaxImageContentBytes;
  McpKeepFile keep;  // empty: files other than images are embedded resources
};

// The `content` array for `result`, whose JSON (ToJson) is `result_json`.
boost::json::array McpResultContent(const ExecutionResult& result, const std::string& result_json,
                                    const McpContentOptions& options);
// The same with no file store and the default image budget.
boost::json::array McpResultContent(const ExecutionResult& result, const std::string& result_json,
                                    std::size_t max_text_bytes);

// "file:///out/a%20b.csv" for "/out/a b.csv".
std::string FileUri(const std::string& path);

}  // namespace codeact::internal
