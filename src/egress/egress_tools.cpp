#include "egress/egress_tools.hpp"

#include <algorithm>
#include <boost/json.hpp>

#include "common/utf8.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace {

namespace json = boost::json;

constexpr std::string_view kHeadersSchema =
    R"("headers":{"type":["object","null"],"additionalProperties":{"type":"string"}})";

std::string Schema(std::string_view properties, std::string_view required) {
  return std::string(R"({"type":"object","properties":{)") + std::string(properties) + "," +
         std::string(kHeadersSchema) + R"(},"required":[)" + std::string(required) +
         R"(],"additionalProperties":false})";
}

ToolResult Bad(const std::string& message) { return ToolResult::Failure("ValueError", message); }

// The string argument `key`, or nothing when it is absent or null; `error` set when it is there
// but not a string.
std::optional<std::string> StringArg(const json::object& args, std::string_view key,
                                     std::string& error) {
  const json::value* v = args.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string()) {
    error = "the argument " + std::string(key) + " must be a string";
    return std::nullopt;
  }
  return std::string(v->as_string());
}

ToolResult Call(const EgressClient& client, const std::string& tool, const std::string& kwargs,
                const ToolCallContext& context) {
  json::error_code ec;
  const json::value parsed = ParseJson(kwargs, ec);
  if (ec || !parsed.is_object()) return Bad(tool + ": the arguments must be a JSON object");
  const json::object& args = parsed.as_object();
  std::string error;
  EgressRequest request;
  std::optional<std::string> url = StringArg(args, "url", error);
  if (!error.empty()) return Bad(tool + ": " + error);
  if (!url) return Bad(tool + ": the argument url is required");
  request.url = *url;
  if (tool == "http_get") {
    request.method = "GET";
  } else if (tool == "http_post") {
    request.method = "POST";
  } else {
    std::optional<std::string> method = StringArg(args, "method", error);
    if (!error.empty()) return Bad(tool + ": " + error);
    if (!method) return Bad(tool + ": the argument method is required");
    request.method = *method;
  }
  if (const json::value* h = args.if_contains("headers"); h != nullptr && !h->is_null()) {
    if (!h->is_object()) return Bad(tool + ": headers must be a dict of str to str");
    for (const auto& [name, value] : h->as_object()) {
      if (!value.is_string()) return Bad(tool + ": headers must be a dict of str to str");
      request.headers.emplace_back(std::string(name), std::string(value.as_string()));
    }
  }
  std::optional<std::string> body = StringArg(args, "body", error);
  if (!error.empty()) return Bad(tool + ": " + error + " (use json.dumps for data)");
  if (body) {
    request.body = *body;
    request.has_body = true;
  }
  if (tool == "http_post") {
    // As the hyperlight guest's http_post(url, body, content_type="application/json").
    request.has_body = true;
    std::optional<std::string> content_type = StringArg(args, "content_type", error);
    if (!error.empty()) return Bad(tool + ": " + error);
    const bool has_type = std::any_of(request.headers.begin(), request.headers.end(), [](auto& h) {
      std::string n = h.first;
      std::transform(n.begin(), n.end(), n.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      return n == "content-type";
    });
    if (content_type || !has_type) {
      request.headers.emplace_back("Content-Type", content_type.value_or("application/json"));
    }
  }
  // The result travels in one frame: a body the frame cannot hold fails here, naming the cap.
  request.max_response_bytes = context.max_result_bytes;
  StatusOr<EgressResponse> response = client.Fetch(request, context.cancel);
  if (!response.ok()) return ToolResult::Failure("HttpError", response.status().message());
  json::object out;
  out["status"] = response->status;
  out["body"] = SanitizeUtf8(response->body);
  return ToolResult::Success(SerializeJson(out));
}

}  // namespace

std::string DescribeEgress(const std::vector<EgressTarget>& targets) {
  std::string out =
      "only these targets are reachable, by the host on the code's behalf (scheme, host and "
      "port must match exactly):\n";
  for (const EgressTarget& t : targets) out += "- " + t.Display() + "\n";
  out +=
      "Call them with `r = await http_get(url, headers=None)`, `r = await http_post(url, "
      "body=\"...\", headers=None)` (Content-Type application/json unless given) or `r = await "
      "http_request(method, url, headers=None, body=None)`; r is {\"status\": int, \"body\": "
      "str}. Redirects are followed only to listed targets; a refused or failed request (an "
      "unlisted target or method, a loopback or private address, a bad certificate, a body "
      "over the cap, the time limit) raises ToolError \"HttpError\". Network modules (socket, "
      "urllib, http.client, ...) stay unavailable.\n";
  return out;
}

bool IsEgressToolName(std::string_view name) {
  return std::find(kEgressToolNames.begin(), kEgressToolNames.end(), name) !=
         kEgressToolNames.end();
}

std::vector<HostTool> MakeEgressTools(std::shared_ptr<const EgressClient> client) {
  std::vector<HostTool> tools;
  auto add = [&](std::string name, std::string description, std::string schema) {
    HostTool t;
    t.name = name;
    t.description = std::move(description);
    t.parameters_schema = std::move(schema);
    t.cancellable_handler = [client, name](const std::string& kwargs,
                                           const ToolCallContext& context) {
      return Call(*client, name, kwargs, context);
    };
    tools.push_back(std::move(t));
  };
  add("http_get", "GET a URL of a listed network target; returns {\"status\", \"body\"}.",
      Schema(R"("url":{"type":"string"})", R"("url")"));
  add("http_post",
      "POST a body to a URL of a listed network target; returns {\"status\", \"body\"}.",
      Schema(R"("url":{"type":"string"},"body":{"type":["string","null"]},)"
             R"("content_type":{"type":["string","null"]})",
             R"("url")"));
  add("http_request",
      "Send a request with any allowed method to a URL of a listed network target; returns "
      "{\"status\", \"body\"}.",
      Schema(R"("method":{"type":"string"},"url":{"type":"string"},)"
             R"("body":{"type":["string","null"]})",
             R"("method","url")"));
  return tools;
}

}  // namespace codeact::internal
