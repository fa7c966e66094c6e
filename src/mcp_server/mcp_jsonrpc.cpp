// McpProtocol and the JSON-RPC reply codec (mcp_jsonrpc.hpp).
#include "mcp_server/mcp_jsonrpc.hpp"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <cmath>
#include <exception>
#include <variant>

#include "codeact/provider.hpp"
#include "codeact_build_config.hpp"
#include "common/utf8.hpp"
#include "json/raw_json.hpp"
#include "json/serialize.hpp"
#include "mcp_server/mcp_resources.hpp"
#include "mcp_server/mcp_revisions.hpp"

namespace codeact::internal {

namespace json = boost::json;
using jsonrpc::ErrorLine;
using jsonrpc::kInternalErrorCode;
using jsonrpc::kInvalidParams;
using jsonrpc::kInvalidRequest;
using jsonrpc::kMethodNotFound;
using jsonrpc::kNullId;
using jsonrpc::kParseError;
using jsonrpc::ResultLine;

namespace jsonrpc {

std::string ErrorLine(std::string_view id, int code, std::string_view message) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out.append(id);
  out += R"(,"error":)";
  AppendJson(out, json::object{{"code", code}, {"message", message}});
  out += '}';
  return out;
}

std::string ResultLine(std::string_view id, const json::value& result) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out.append(id);
  out += R"(,"result":)";
  AppendJson(out, result);
  out += '}';
  return out;
}

}  // namespace jsonrpc

namespace {

constexpr std::string_view kBatchVersion = kMcpBatchRevision;

std::string ParseErrorText(const json::error_code& ec) {
  if (ec == json::error::too_deep) return "Parse error: the message is " + JsonErrorText(ec);
  return "Parse error: " + ec.message();
}

// What identifies a request for notifications/cancelled: its id's value (a string's text, a
// number's digits as sent).
std::string IdKey(const json::value& id, std::string_view raw) {
  if (id.is_string()) return "s" + std::string(id.as_string());
  return "n" + std::string(raw);
}

// params._meta.progressToken (a string or an integer, MCP "Progress"); anything else is
// ignored, as is a token of another type.
std::optional<std::string> ProgressToken(const json::object& p) {
  const json::value* meta = p.if_contains("_meta");
  if (meta == nullptr || !meta->is_object()) return std::nullopt;
  const json::value* token = meta->as_object().if_contains("progressToken");
  if (token == nullptr || !(token->is_string() || token->is_int64() || token->is_uint64()))
    return std::nullopt;
  return SerializeJson(*token);
}

}  // namespace

McpProtocol::McpProtocol(const McpServerOptions& options, std::shared_ptr<spdlog::logger> logger,
                         McpLogging& logging)
    : options_(options), logger_(std::move(logger)), logging_(logging) {}

std::string McpProtocol::OversizedLine() const {
  logger_->warn("request line over {} bytes discarded", options_.max_line_bytes);
  return ErrorLine(kNullId, kInvalidRequest,
                   "Invalid Request: the message is longer than the server's limit of " +
                       std::to_string(options_.max_line_bytes) + " bytes; it was discarded");
}

McpProtocol::Parsed McpProtocol::ParseLine(std::string_view line) {
  Parsed parsed;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.remove_suffix(1);
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return parsed;  // blank: skipped
  if (line.size() > options_.max_line_bytes) {
    parsed.response = OversizedLine();
    return parsed;
  }

  json::error_code ec;
  const json::value msg = ParseJson(line, ec);
  if (ec) {
    logger_->warn("parse error: {}", ec.message());
    parsed.response = ErrorLine(kNullId, kParseError, ParseErrorText(ec));
    return parsed;
  }
  if (!msg.is_array()) {
    parsed.items.push_back(DispatchMessage(msg, line, /*in_batch=*/false));
    return parsed;
  }
  const std::string version = Negotiated();
  if (version != kBatchVersion) {
    parsed.response =
        ErrorLine(kNullId, kInvalidRequest,
                  "Invalid Request: batch arrays exist only in MCP protocol version " +
                      std::string(kBatchVersion) +
                      (version.empty() ? std::string(", and no version was negotiated yet")
                                       : ", not in the negotiated " + version));
    return parsed;
  }
  const json::array& elements = msg.as_array();
  if (elements.empty()) {
    parsed.response = ErrorLine(kNullId, kInvalidRequest, "Invalid Request: an empty batch");
    return parsed;
  }
  const std::vector<std::string_view> raw = RawArrayElements(line);
  if (raw.size() != elements.size()) {  // cannot happen for valid JSON; never echo a wrong id
    parsed.response =
        ErrorLine(kNullId, kInternalErrorCode, "Internal error: cannot split the batch");
    return parsed;
  }
  parsed.batch = true;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    parsed.items.push_back(DispatchMessage(elements[i], raw[i], /*in_batch=*/true));
  }
  return parsed;
}

// One message; `raw` is its text, from which the id is copied.
McpProtocol::Dispatch McpProtocol::DispatchMessage(const json::value& msg, std::string_view raw,
                                                   bool in_batch) {
  Dispatch d;
  if (!msg.is_object()) {
    d.response =
        ErrorLine(kNullId, kInvalidRequest, "Invalid Request: a message must be a JSON object");
    return d;
  }
  const json::object& o = msg.as_object();
  const json::value* id = o.if_contains("id");
  // A number that overflowed to infinity is no id anyone can mean.
  const bool id_ok = id == nullptr || id->is_string() || id->is_int64() || id->is_uint64() ||
                     (id->is_double() && std::isfinite(id->as_double()));
  std::string_view id_text = kNullId;
  if (id_ok && id != nullptr) {
    if (auto found = RawMember(raw, "id")) id_text = *found;
  }
  const std::string reply_id(id_text);
  const json::value* version = o.if_contains("jsonrpc");
  if (version == nullptr || !version->is_string() || version->as_string() != "2.0") {
    d.response =
        ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    return d;
  }
  if (!id_ok) {
    d.response =
        ErrorLine(kNullId, kInvalidRequest, "Invalid Request: \"id\" must be a string or a number");
    return d;
  }
  const json::value* method = o.if_contains("method");
  if (method == nullptr) {
    // A response to a request of ours; the server sends none, so there is nothing to match.
    if (id != nullptr && (o.contains("result") || o.contains("error"))) return d;
    d.response = ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"method\" is missing");
    return d;
  }
  if (!method->is_string()) {
    d.response =
        ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"method\" must be a string");
    return d;
  }
  const json::value* params = o.if_contains("params");
  if (params != nullptr && !params->is_object() && !params->is_array()) {
    d.response =
        ErrorLine(reply_id, kInvalidRequest, "Invalid Request: \"params\" must be an object");
    return d;
  }
  const std::string_view name = method->as_string();
  if (id == nullptr) {  // a notification: never answered
    if (name == "notifications/initialized") {
      logger_->info("client initialized");
    } else if (name == "notifications/cancelled") {
      NoteCancellation(params, raw, d);
    }
    return d;
  }
  if (params != nullptr && !params->is_object()) {
    d.response =
        ErrorLine(reply_id, kInvalidParams, "Invalid params: \"params\" must be an object");
    return d;
  }
  const json::object empty;
  DispatchRequest(name, params != nullptr ? params->as_object() : empty, *id, id_text, in_batch, d);
  return d;
}

// A request with a valid envelope, by its method: the answer in `d.response`, or for a
// tools/call of execute_code what the call needs.
void McpProtocol::DispatchRequest(std::string_view name, const json::object& p,
                                  const json::value& id, std::string_view id_text, bool in_batch,
                                  Dispatch& d) {
  const std::string reply_id(id_text);
  // 2026-07-28 names its revision per request (mcp_revisions.hpp); others rely on initialize.
  auto read = ReadRequestMeta(p);
  if (const auto* error = std::get_if<McpRpcError>(&read)) {
    d.response = McpErrorLine(reply_id, *error);
    return;
  }
  const bool stateless = std::get<McpRequestMeta>(read).stateless;
  if (stateless && RemovedInStatelessRevision(name)) {
    d.response = ErrorLine(reply_id, kMethodNotFound,
                           "Method not found: " + std::string(name) + " is not part of protocol " +
                               std::string(kMcpStatelessRevision));
  } else if (name == "server/discover") {
    d.response = stateless ? ResultLine(reply_id, DiscoverResult(Identity()))
                           : ErrorLine(reply_id, kInvalidParams,
                                       "Invalid params: server/discover needs _meta \"" +
                                           std::string(kMetaProtocolVersion) + "\" and \"" +
                                           std::string(kMetaClientCapabilities) + "\"");
  } else if (name == "initialize") {
    d.response = in_batch ? ErrorLine(reply_id, kInvalidRequest,
                                      "Invalid Request: initialize must not be part of a batch")
                          : Initialize(reply_id, p);
  } else if (name == "ping") {
    d.response = ResultLine(reply_id, json::object{});
  } else if (name == "tools/list") {
    d.response = ToolsList(reply_id, stateless);
  } else if (name == "logging/setLevel") {
    d.response = SetLevel(reply_id, p);
  } else if (IsResourceOrPromptMethod(name)) {
    d.response = ResourcesAndPrompts(name, reply_id, p, stateless);
  } else if (name == "tools/call") {
    const json::value* tool = p.if_contains("name");
    if (tool == nullptr || !tool->is_string()) {
      d.response = ErrorLine(reply_id, kInvalidParams,
                             "Invalid params: tools/call needs \"name\" (a string)");
    } else if (tool->as_string() != ExecuteCodeFunction::kName) {
      d.response = ErrorLine(reply_id, kInvalidParams,
                             "Unknown tool: " + std::string(tool->as_string()) +
                                 " (this server has only " + ExecuteCodeFunction::kName + ")");
    } else {
      d.is_call = true;
      d.stateless = stateless;
      d.id = reply_id;
      d.id_key = IdKey(id, id_text);
      const json::value* args = p.if_contains("arguments");
      // Wrong arguments are the tool's business: the provider answers with an argument error
      // the model can read, so they are passed through as they came.
      d.arguments_json = args != nullptr ? SerializeJson(*args) : "{}";
      d.progress_token = ProgressToken(p);
      if (stateless) d.log_level = ParseMcpLogLevel(std::get<McpRequestMeta>(read).log_level);
    }
  } else {
    d.response = ErrorLine(reply_id, kMethodNotFound, "Method not found: " + std::string(name));
  }
}

// notifications/cancelled {"requestId": ..., "reason": "..."}: which request, and why.
void McpProtocol::NoteCancellation(const json::value* params, std::string_view raw, Dispatch& d) {
  const json::value* request = params != nullptr && params->is_object()
                                   ? params->as_object().if_contains("requestId")
                                   : nullptr;
  if (request == nullptr || !(request->is_string() || request->is_number())) {
    logger_->warn("notifications/cancelled without a usable requestId ignored");
    return;
  }
  std::string_view request_text;
  if (auto params_text = RawMember(raw, "params")) {
    if (auto found = RawMember(*params_text, "requestId")) request_text = *found;
  }
  d.cancel_key = IdKey(*request, request_text);
  const json::value* reason = params->as_object().if_contains("reason");
  d.cancel_reason = "the client cancelled the request";
  if (reason != nullptr && reason->is_string() && !reason->as_string().empty()) {
    d.cancel_reason += ": " + SanitizeUtf8(std::string(reason->as_string()));
  }
}

std::string McpProtocol::Negotiated() {
  std::lock_guard lock(version_mu_);
  return negotiated_;
}

std::string McpProtocol::Initialize(std::string_view id, const json::object& p) {
  const json::value* requested = p.if_contains("protocolVersion");
  if (requested == nullptr || !requested->is_string()) {
    return ErrorLine(id, kInvalidParams,
                     "Invalid params: initialize needs \"protocolVersion\" (a string)");
  }
  const std::string_view answer = NegotiateHandshakeRevision(requested->as_string());
  logger_->info("initialize: client asked for protocol {}, answering {}",
                std::string_view(requested->as_string()), answer);
  {
    std::lock_guard lock(version_mu_);
    negotiated_ = std::string(answer);
  }
  const std::string version = Identity().version;
  return ResultLine(id, json::object{{"protocolVersion", answer},
                                     {"capabilities", McpServerCapabilities()},
                                     {"serverInfo", json::object{{"name", options_.server_name},
                                                                 {"version", version}}},
                                     {"instructions", options_.instructions}});
}

std::string McpProtocol::ResourcesAndPrompts(std::string_view name, std::string_view id,
                                             const json::object& p, bool stateless) {
  auto answer = AnswerResourcesOrPrompts(
      name, p, stateless, {options_.files.get(), options_.caller, options_.instructions});
  if (auto* error = std::get_if<McpRpcError>(&answer)) return McpErrorLine(id, *error);
  json::object& result = std::get<json::object>(answer);
  if (stateless) MarkStatelessResult(result, Identity());
  return ResultLine(id, result);
}

// logging/setLevel {"level": L}: from now on the client hears log messages at L and above.
std::string McpProtocol::SetLevel(std::string_view id, const json::object& p) {
  const json::value* level = p.if_contains("level");
  const std::optional<McpLogLevel> parsed =
      level != nullptr && level->is_string() ? ParseMcpLogLevel(level->as_string()) : std::nullopt;
  if (!parsed) {
    return ErrorLine(id, kInvalidParams,
                     "Invalid params: logging/setLevel needs \"level\": debug, info, notice, "
                     "warning, error, critical, alert or emergency");
  }
  logging_.SetLevel(*parsed);
  logger_->info("logging/setLevel: {}", McpLogLevelName(*parsed));
  return ResultLine(id, json::object{});
}

McpServerIdentity McpProtocol::Identity() const {
  return {options_.server_name,
          options_.server_version.empty() ? std::string(kVersion) : options_.server_version,
          options_.instructions};
}

std::string McpProtocol::ToolsList(std::string_view id, bool stateless) {
  if (!options_.tool_definition)
    return ErrorLine(id, kInternalErrorCode, "Internal error: no tool definition");
  std::string definition;
  try {
    definition = options_.tool_definition();
  } catch (const std::exception& e) {
    return ErrorLine(id, kInternalErrorCode, std::string("Internal error: ") + e.what());
  }
  json::error_code ec;
  json::value tool = json::parse(definition, ec);
  if (ec || !tool.is_object())
    return ErrorLine(id, kInternalErrorCode, "Internal error: bad tool definition");
  json::object result{{"tools", json::array{std::move(tool)}}};
  if (stateless) {
    MarkStatelessResult(result, Identity());
    // CacheableResult: the definition follows the provider's snapshot and the caller's
    // sessions, so no client or intermediary may keep it.
    result["ttlMs"] = 0;
    result["cacheScope"] = "private";
  }
  return ResultLine(id, result);
}

}  // namespace codeact::internal
