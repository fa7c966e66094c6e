// Resources and prompts (mcp_resources.hpp).
#include "mcp_server/mcp_resources.hpp"

#include <boost/json.hpp>

#include "common/utf8.hpp"
#include "json/base64.hpp"
#include "mcp_server/mcp_file_store.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

McpRpcError InvalidParams(std::string message) {
  return McpRpcError{kJsonRpcInvalidParams, "Invalid params: " + std::move(message), std::nullopt,
                     400};
}

bool IsText(const std::string& media_type, const std::string& data) {
  const bool text_type = media_type.rfind("text/", 0) == 0 || media_type == "application/json" ||
                         media_type == "image/svg+xml" || media_type.ends_with("+json") ||
                         media_type.ends_with("+xml") || media_type == "application/xml";
  return text_type && !Utf8Violation(data);
}

json::object ResourcesList(const McpResourceContext& context) {
  json::array resources;
  if (context.files != nullptr) {
    for (const McpFileStore::Kept& f :
         context.files->List(context.caller, McpFileStore::Clock::now())) {
      resources.push_back(json::object{
          {"uri", f.uri},
          {"name", f.name},
          {"description", "a file execute_code captured from " + f.name + "; kept for a while"},
          {"mimeType", f.media_type},
          {"size", f.data->size()}});
    }
  }
  return json::object{{"resources", std::move(resources)}};
}

std::variant<json::object, McpRpcError> ResourcesRead(const json::object& params, bool stateless,
                                                      const McpResourceContext& context) {
  const json::value* uri = params.if_contains("uri");
  if (uri == nullptr || !uri->is_string()) {
    return InvalidParams("resources/read needs \"uri\" (a string)");
  }
  const std::string wanted(uri->as_string());
  std::optional<McpFileStore::Kept> kept;
  if (context.files != nullptr) {
    kept = context.files->Read(context.caller, wanted, McpFileStore::Clock::now());
  }
  if (!kept) {
    McpRpcError e;
    e.code = stateless ? kJsonRpcInvalidParams : kMcpResourceNotFound;
    e.message = "Resource not found: " + SanitizeUtf8(wanted.substr(0, 300)) +
                " (this server keeps only the files its execute_code results linked, for their "
                "caller, for a limited time; it may have expired or been evicted)";
    e.data = json::object{{"uri", SanitizeUtf8(wanted.substr(0, 300))}};
    e.http_status = 404;
    return e;
  }
  json::object content{{"uri", kept->uri}, {"mimeType", kept->media_type}};
  if (IsText(kept->media_type, *kept->data)) {
    content["text"] = *kept->data;
  } else {
    content["blob"] = Base64Encode(*kept->data);
  }
  return json::object{{"contents", json::array{std::move(content)}}};
}

json::object PromptsList() {
  return json::object{
      {"prompts",
       json::array{json::object{
           {"name", kInstructionsPromptName},
           {"title", "How to use execute_code"},
           {"description",
            "codeact's instructions for a model that calls execute_code: how to write the code, "
            "call tools and read results"}}}}};
}

std::variant<json::object, McpRpcError> PromptsGet(const json::object& params,
                                                   const McpResourceContext& context) {
  const json::value* name = params.if_contains("name");
  if (name == nullptr || !name->is_string()) {
    return InvalidParams("prompts/get needs \"name\" (a string)");
  }
  if (name->as_string() != kInstructionsPromptName) {
    return InvalidParams("unknown prompt '" +
                         SanitizeUtf8(std::string(name->as_string()).substr(0, 200)) +
                         "' (this server has only " + std::string(kInstructionsPromptName) + ")");
  }
  return json::object{
      {"description", "codeact's instructions for using execute_code"},
      {"messages",
       json::array{json::object{
           {"role", "user"},
           {"content", json::object{{"type", "text"}, {"text", context.instructions}}}}}}};
}

}  // namespace

bool IsResourceOrPromptMethod(std::string_view method) {
  return method == "resources/list" || method == "resources/read" ||
         method == "resources/templates/list" || method == "prompts/list" ||
         method == "prompts/get";
}

std::variant<json::object, McpRpcError> AnswerResourcesOrPrompts(
    std::string_view method, const json::object& params, bool stateless,
    const McpResourceContext& context) {
  if (method == "resources/list") return ResourcesList(context);
  if (method == "resources/read") return ResourcesRead(params, stateless, context);
  if (method == "resources/templates/list") {
    return json::object{{"resourceTemplates", json::array{}}};
  }
  if (method == "prompts/list") return PromptsList();
  return PromptsGet(params, context);
}

}  // namespace codeact::internal
