// The content blocks of an execute_code result (mcp_result.hpp).
#include "mcp_server/mcp_result.hpp"

#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <string_view>
#include <vector>

#include "common/utf8.hpp"
#include "json/base64.hpp"
#include "json/serialize.hpp"
#include "mcp_server/image_sniff.hpp"

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

// How one captured file travels: as an image block, a link to a kept file, an embedded resource,
// or (a link the store refused) not at all.
struct FilePlan {
  std::optional<std::string_view> image_type;
  std::optional<std::string> link;
  bool embedded = false;
};

std::vector<FilePlan> PlanFiles(const ExecutionResult& result, const McpContentOptions& options) {
  std::vector<FilePlan> plans(result.files.size());
  std::size_t image_bytes = 0;
  for (std::size_t i = 0; i < result.files.size(); ++i) {
    const CapturedFile& f = result.files[i];
    FilePlan& plan = plans[i];
    if (auto type = SniffImageMediaType(f.data);
        type && image_bytes + f.data.size() <= options.max_image_bytes) {
      image_bytes += f.data.size();
      plan.image_type = type;
    } else if (options.keep) {
      plan.link = options.keep(f);
    } else {
      plan.embedded = true;
    }
  }
  return plans;
}

// The text's entry of a file: its bytes replaced by where they went.
void NoteFile(json::object& file, const CapturedFile& f, const FilePlan& plan) {
  file.erase("data_base64");
  if (plan.image_type) {
    file["shown_as"] = "image";
  } else if (plan.link) {
    file["resource"] = *plan.link;
  } else if (plan.embedded) {
    file["resource"] = FileUri(f.path);
  } else {
    file["resource"] = nullptr;
    file["note"] =
        "not kept for resources/read (over the server's file store caps); "
        "structuredContent has its bytes";
  }
}

json::object FileBlock(const CapturedFile& f, const FilePlan& plan) {
  if (plan.image_type) {
    return json::object{
        {"type", "image"}, {"data", Base64Encode(f.data)}, {"mimeType", *plan.image_type}};
  }
  if (plan.link) {
    return json::object{{"type", "resource_link"},
                        {"uri", *plan.link},
                        {"name", f.path},
                        {"mimeType", f.media_type},
                        {"size", f.data.size()}};
  }
  json::object resource{{"uri", FileUri(f.path)}, {"mimeType", f.media_type}};
  if (IsTextMedia(f.media_type) && !Utf8Violation(f.data)) {
    resource["text"] = f.data;
  } else {
    resource["blob"] = Base64Encode(f.data);
  }
  return json::object{{"type", "resource"}, {"resource", std::move(resource)}};
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
  McpContentOptions options;
  options.max_text_bytes = max_text_bytes;
  return McpResultContent(result, result_json, options);
}

json::array McpResultContent(const ExecutionResult& result, const std::string& result_json,
                             const McpContentOptions& options) {
  const std::size_t max_text_bytes = options.max_text_bytes;
  const std::vector<FilePlan> plans = PlanFiles(result, options);
  json::error_code ec;
  json::value parsed = ParseJson(result_json, ec);
  json::array content;
  if (ec || !parsed.is_object()) {
    content.push_back(json::object{{"type", "text"}, {"text", SanitizeUtf8(result_json)}});
    return content;
  }
  json::object& text_result = parsed.as_object();
  if (json::value* files = text_result.if_contains("files"); files && files->is_array()) {
    json::array& entries = files->as_array();
    for (std::size_t i = 0; i < entries.size() && i < plans.size(); ++i) {
      if (entries[i].is_object()) NoteFile(entries[i].as_object(), result.files[i], plans[i]);
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
  for (std::size_t i = 0; i < result.files.size(); ++i) {
    const FilePlan& plan = plans[i];
    if (plan.image_type || plan.link || plan.embedded) {
      content.push_back(FileBlock(result.files[i], plan));
    }
  }
  return content;
}

}  // namespace codeact::internal
