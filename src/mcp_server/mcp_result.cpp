// The content blocks of an execute_code result (mcp_result.hpp).
#include "mcp_server/mcp_result.hpp"

#include <boost/json.hpp>
#include <cctype>
#include <cstdio>

#include "common/utf8.hpp"
#include "json/base64.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

// What a trimmed text keeps of each long string: its start and its end.
constexpr std::size_t kKeepHeadBytes = 4 * 1024;
constexpr std::size_t kKeepTailBytes = 1024;
// An output value whose JSON is longer is shown as the start of that JSON.
constexpr std::size_t kKeepOutputBytes = 2 * 1024;

// Cuts at a UTF-8 character boundary at or before `n`.
std::size_t Boundary(const std::string& s, std::size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

// Head and tail of `field` around a marker; true when it was trimmed.
bool TrimString(json::object& o, std::string_view field) {
  json::value* v = o.if_contains(field);
  if (v == nullptr || !v->is_string()) return false;
  const std::string s(v->as_string());
  if (s.size() <= kKeepHeadBytes + kKeepTailBytes + 64) return false;
  const std::size_t head = Boundary(s, kKeepHeadBytes);
  std::size_t tail = Boundary(s, s.size() - kKeepTailBytes);
  const std::size_t left_out = tail - head;
  *v = s.substr(0, head) + "\n[... " + std::to_string(left_out) + " bytes trimmed ...]\n" +
       s.substr(tail);
  return true;
}

bool IsTextMedia(const std::string& media_type) {
  return media_type.rfind("text/", 0) == 0 || media_type == "application/json" ||
         media_type == "application/xml" || media_type.ends_with("+json") ||
         media_type.ends_with("+xml");
}

}  // namespace

std::string FileUri(const std::string& path) {
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

json::array McpResultContent(const ExecutionResult& result, const std::string& result_json,
                             std::size_t max_text_bytes) {
  json::error_code ec;
  json::value parsed = ParseJson(result_json, ec);
  json::array content;
  if (ec || !parsed.is_object()) {
    content.push_back(json::object{{"type", "text"}, {"text", SanitizeUtf8(result_json)}});
    return content;
  }
  json::object& text_result = parsed.as_object();
  if (json::value* files = text_result.if_contains("files"); files && files->is_array()) {
    for (auto& f : files->as_array()) {
      if (!f.is_object()) continue;
      json::object& file = f.as_object();
      file.erase("data_base64");
      if (const json::value* path = file.if_contains("path"); path && path->is_string())
        file["resource"] = FileUri(std::string(path->as_string()));
    }
  }
  // A run that succeeded and showed nothing reads to a model like a lost result; the text says
  // so in words (Microsoft Agent Framework's wording). Only here: structuredContent and the
  // result JSON elsewhere keep their fields as they are.
  if (result.success() && result.stdout_text.empty() && result.stderr_text.empty() &&
      !result.output_present && result.files.empty() && result.message.empty()) {
    json::object with_summary;
    with_summary["summary"] = kNoOutputSummary;
    for (auto& [key, value] : text_result) with_summary[key] = std::move(value);
    text_result = std::move(with_summary);
  }
  std::string text = SerializeJson(text_result);
  if (text.size() > max_text_bytes) {
    std::string trimmed;
    for (std::string_view field : {"stdout", "stderr"}) {
      if (TrimString(text_result, field))
        trimmed += (trimmed.empty() ? "" : ", ") + std::string(field);
    }
    if (json::value* error = text_result.if_contains("error"); error && error->is_object()) {
      if (TrimString(error->as_object(), "traceback"))
        trimmed += (trimmed.empty() ? "" : ", ") + std::string("error.traceback");
    }
    if (json::value* output = text_result.if_contains("output")) {
      const std::string output_json = SerializeJson(*output);
      if (output_json.size() > kKeepOutputBytes) {
        *output = output_json.substr(0, Boundary(output_json, kKeepOutputBytes)) + " [... " +
                  std::to_string(output_json.size()) + " bytes of JSON in all]";
        trimmed +=
            (trimmed.empty() ? "" : ", ") + std::string("output (now the start of its JSON)");
      }
    }
    json::object with_summary;
    with_summary["summary"] = "this text is the result JSON of " + std::to_string(text.size()) +
                              " bytes, trimmed" +
                              (trimmed.empty() ? std::string() : " (" + trimmed + ")") +
                              "; structuredContent holds the whole result";
    for (auto& [key, value] : text_result) with_summary[key] = std::move(value);
    text = SerializeJson(with_summary);
  }
  content.push_back(json::object{{"type", "text"}, {"text", std::move(text)}});
  for (const auto& f : result.files) {
    json::object resource{{"uri", FileUri(f.path)}, {"mimeType", f.media_type}};
    if (IsTextMedia(f.media_type) && !Utf8Violation(f.data)) {
      resource["text"] = f.data;
    } else {
      resource["blob"] = Base64Encode(f.data);
    }
    content.push_back(json::object{{"type", "resource"}, {"resource", std::move(resource)}});
  }
  return content;
}

}  // namespace codeact::internal
