// McpRevisions (mcp_revisions.hpp): revision lists, the 2026-07-28 per-request _meta, discover,
// the Streamable HTTP header rules, the Origin policy and CORS.
#include "mcp_server/mcp_revisions.hpp"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cctype>

#include "json/base64.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

constexpr std::array<std::string_view, 5> kRevisions = {
    kMcpStatelessRevision, "2025-11-25", "2025-06-18", kMcpBatchRevision, "2024-11-05"};

// basic/utilities/logging's LoggingLevel (RFC 5424 severities).
constexpr std::array<std::string_view, 8> kLogLevels = {"debug", "info",     "notice", "warning",
                                                        "error", "critical", "alert",  "emergency"};

// How long a client may reuse a server/discover answer: what it says changes only with a new
// build or new flags, which restart the server.
constexpr std::int64_t kDiscoverTtlMs = 60'000;

json::array RevisionArray() {
  json::array out;
  for (std::string_view v : kRevisions) out.emplace_back(v);
  return out;
}

McpRpcError InvalidParams(std::string message) {
  return McpRpcError{kJsonRpcInvalidParams, "Invalid params: " + std::move(message), std::nullopt,
                     400};
}

McpRpcError HeaderMismatch(std::string message) {
  return McpRpcError{kMcpHeaderMismatch, "Header mismatch: " + std::move(message), std::nullopt,
                     400};
}

McpRpcError Unsupported(std::string_view requested, std::string_view where) {
  McpRpcError e;
  e.code = kMcpUnsupportedProtocolVersion;
  e.message = "Unsupported protocol version";
  e.message.append(where);
  e.data = json::object{{"supported", RevisionArray()}, {"requested", requested}};
  e.http_status = 400;
  return e;
}

// A header value RFC 9110 allows: visible ASCII, space and tab.
bool ValidHeaderValue(std::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u <= 0x7e);
  });
}

// Mcp-Name's value, decoded from the "=?base64?...?=" sentinel (streamable-http "Value
// Encoding"); nothing when the sentinel's content is not base64.
std::optional<std::string> DecodeHeaderValue(std::string_view v) {
  constexpr std::string_view kPrefix = "=?base64?";
  constexpr std::string_view kSuffix = "?=";
  if (v.size() >= kPrefix.size() + kSuffix.size() && v.starts_with(kPrefix) &&
      v.ends_with(kSuffix)) {
    return Base64Decode(v.substr(kPrefix.size(), v.size() - kPrefix.size() - kSuffix.size()));
  }
  return std::string(v);
}

std::string Quoted(std::string_view v) {
  std::string out = "'";
  out.append(v.substr(0, 200));
  out += '\'';
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::span<const std::string_view> SupportedMcpRevisions() { return kRevisions; }

bool IsSupportedMcpRevision(std::string_view version) {
  return std::find(kRevisions.begin(), kRevisions.end(), version) != kRevisions.end();
}

bool IsStatelessMcpRevision(std::string_view version) { return version == kMcpStatelessRevision; }

std::string_view NegotiateHandshakeRevision(std::string_view requested) {
  for (std::string_view v : kRevisions) {
    if (!IsStatelessMcpRevision(v) && v == requested) return v;
  }
  return kRevisions[1];  // the newest handshake revision
}

std::string McpErrorLine(std::string_view id_text, const McpRpcError& error) {
  json::object e{{"code", error.code}, {"message", error.message}};
  if (error.data) e["data"] = *error.data;
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out.append(id_text.empty() ? std::string_view("null") : id_text);
  out += R"(,"error":)";
  AppendJson(out, e);
  out += '}';
  return out;
}

std::string McpTransportErrorBody(int http_status, std::string_view reason,
                                  std::string_view message) {
  McpRpcError e;
  e.code = http_status >= 500 ? kJsonRpcInternalError : kJsonRpcInvalidRequest;
  e.message = std::string(message);
  e.data = json::object{{"reason", reason}};
  e.http_status = http_status;
  return McpErrorLine("null", e);
}

std::variant<McpRequestMeta, McpRpcError> ReadRequestMeta(const json::object& params) {
  McpRequestMeta meta;
  const json::value* m = params.if_contains("_meta");
  if (m == nullptr) return meta;
  if (!m->is_object()) return InvalidParams("\"_meta\" must be an object");
  const json::object& o = m->as_object();
  const json::value* version = o.if_contains(kMetaProtocolVersion);
  if (version == nullptr) return meta;
  if (!version->is_string()) {
    return InvalidParams("_meta \"" + std::string(kMetaProtocolVersion) + "\" must be a string");
  }
  const std::string_view v = version->as_string();
  if (!IsSupportedMcpRevision(v)) return Unsupported(v, "");
  // A handshake revision named per request: the version that counts is the one initialize
  // negotiated, so the request is served as before.
  if (!IsStatelessMcpRevision(v)) return meta;

  meta.stateless = true;
  meta.protocol_version = std::string(v);
  const json::value* caps = o.if_contains(kMetaClientCapabilities);
  if (caps == nullptr) {
    return InvalidParams("a " + std::string(kMcpStatelessRevision) + " request needs _meta \"" +
                         std::string(kMetaClientCapabilities) + "\"");
  }
  if (!caps->is_object()) {
    return InvalidParams("_meta \"" + std::string(kMetaClientCapabilities) +
                         "\" must be an object");
  }
  meta.client_capabilities = caps->as_object();
  if (const json::value* info = o.if_contains(kMetaClientInfo)) {
    const json::value* name = info->is_object() ? info->as_object().if_contains("name") : nullptr;
    const json::value* ver = info->is_object() ? info->as_object().if_contains("version") : nullptr;
    if (name == nullptr || !name->is_string() || ver == nullptr || !ver->is_string()) {
      return InvalidParams("_meta \"" + std::string(kMetaClientInfo) +
                           "\" must be an object with \"name\" and \"version\" strings");
    }
    meta.client_name = std::string(name->as_string());
    meta.client_version = std::string(ver->as_string());
  }
  if (const json::value* level = o.if_contains(kMetaLogLevel)) {
    if (!level->is_string() ||
        std::find(kLogLevels.begin(), kLogLevels.end(), std::string_view(level->as_string())) ==
            kLogLevels.end()) {
      return InvalidParams("_meta \"" + std::string(kMetaLogLevel) +
                           "\" must be one of debug, info, notice, warning, error, critical, "
                           "alert, emergency");
    }
    meta.log_level = std::string(level->as_string());
  }
  return meta;
}

json::object McpServerCapabilities() {
  return json::object{
      {"tools", json::object{{"listChanged", false}}},
      {"resources", json::object{{"listChanged", false}, {"subscribe", false}}},
      {"prompts", json::object{{"listChanged", false}}},
      // logging/setLevel under the handshake revisions; a 2026-07-28 call's own _meta logLevel.
      {"logging", json::object{}},
  };
}

json::object DiscoverResult(const McpServerIdentity& server) {
  json::object result{
      {"resultType", "complete"},
      {"supportedVersions", RevisionArray()},
      {"capabilities", McpServerCapabilities()},
      {"serverInfo", json::object{{"name", server.name}, {"version", server.version}}},
      {"ttlMs", kDiscoverTtlMs},
      {"cacheScope", "public"},
  };
  if (!server.instructions.empty()) result["instructions"] = server.instructions;
  return result;
}

void MarkStatelessResult(json::object& result, const McpServerIdentity& server) {
  result["resultType"] = "complete";
  json::value& meta = result["_meta"];
  if (!meta.is_object()) meta = json::object{};
  meta.as_object()[kMetaServerInfo] =
      json::object{{"name", server.name}, {"version", server.version}};
}

bool RemovedInStatelessRevision(std::string_view method) {
  return method == "ping" || method == "logging/setLevel" || method == "initialize";
}

std::optional<McpRpcError> CheckHttpHeaders(const McpHttpHeaders& headers,
                                            const json::value& message,
                                            const McpRequestMeta& meta) {
  if (headers.protocol_version) {
    const std::string& v = *headers.protocol_version;
    if (!ValidHeaderValue(v)) return HeaderMismatch("MCP-Protocol-Version has invalid characters");
    if (!IsSupportedMcpRevision(v)) return Unsupported(v, " (MCP-Protocol-Version header)");
  }
  const json::object* o = message.is_object() ? &message.as_object() : nullptr;
  const json::value* method = o != nullptr ? o->if_contains("method") : nullptr;
  const std::string_view body_method =
      method != nullptr && method->is_string() ? std::string_view(method->as_string()) : "";

  if (meta.stateless) {
    if (!headers.protocol_version) {
      return HeaderMismatch("a " + std::string(kMcpStatelessRevision) +
                            " request needs the MCP-Protocol-Version header");
    }
    if (*headers.protocol_version != meta.protocol_version) {
      return HeaderMismatch("MCP-Protocol-Version header value " +
                            Quoted(*headers.protocol_version) + " does not match body value " +
                            Quoted(meta.protocol_version));
    }
    if (!headers.method) {
      return HeaderMismatch("a " + std::string(kMcpStatelessRevision) +
                            " request needs the Mcp-Method header");
    }
  }
  if (headers.method) {
    if (!ValidHeaderValue(*headers.method))
      return HeaderMismatch("Mcp-Method has invalid characters");
    if (*headers.method != body_method) {
      return HeaderMismatch("Mcp-Method header value " + Quoted(*headers.method) +
                            " does not match body value " + Quoted(body_method));
    }
  }

  // Mcp-Name mirrors params.name (tools/call, prompts/get) or params.uri (resources/read).
  const std::string_view name_field = body_method == "resources/read" ? "uri" : "name";
  const bool names_target = body_method == "tools/call" || body_method == "prompts/get" ||
                            body_method == "resources/read";
  if (!names_target) return std::nullopt;
  const json::value* params = o->if_contains("params");
  const json::value* target = params != nullptr && params->is_object()
                                  ? params->as_object().if_contains(name_field)
                                  : nullptr;
  const std::string_view body_name =
      target != nullptr && target->is_string() ? std::string_view(target->as_string()) : "";
  if (!headers.name) {
    // A body without the name is a bad request the dispatcher answers; nothing to mirror.
    if (meta.stateless && !body_name.empty()) {
      return HeaderMismatch("a " + std::string(kMcpStatelessRevision) + " " +
                            std::string(body_method) + " request needs the Mcp-Name header");
    }
    return std::nullopt;
  }
  if (!ValidHeaderValue(*headers.name)) return HeaderMismatch("Mcp-Name has invalid characters");
  const std::optional<std::string> decoded = DecodeHeaderValue(*headers.name);
  if (!decoded) return HeaderMismatch("Mcp-Name is not valid =?base64?...?= encoding");
  if (*decoded != body_name) {
    return HeaderMismatch("Mcp-Name header value " + Quoted(*headers.name) +
                          " does not match body value " + Quoted(body_name));
  }
  return std::nullopt;
}

bool OriginAllowed(std::string_view origin, const std::vector<std::string>& allowed,
                   bool loopback_listener) {
  if (std::find(allowed.begin(), allowed.end(), origin) != allowed.end()) return true;
  if (!loopback_listener) return false;
  constexpr std::string_view kScheme = "http://";
  if (!origin.starts_with(kScheme)) return false;
  std::string_view rest = origin.substr(kScheme.size());
  std::string_view host;
  if (rest.starts_with("[::1]")) {
    host = rest.substr(0, 5);
    rest.remove_prefix(5);
  } else {
    const std::size_t colon = rest.find(':');
    host = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon);
    if (!EqualsIgnoreCase(host, "localhost") && host != "127.0.0.1") return false;
  }
  if (rest.empty()) return true;
  // ":port", digits only (an Origin has no path); 1..65535.
  if (rest.front() != ':' || rest.size() < 2 || rest.size() > 6) return false;
  int port = 0;
  for (char c : rest.substr(1)) {
    if (c < '0' || c > '9') return false;
    port = port * 10 + (c - '0');
  }
  return port >= 1 && port <= 65535;
}

std::vector<std::pair<std::string, std::string>> CorsHeaders(std::string_view origin,
                                                             bool preflight) {
  std::vector<std::pair<std::string, std::string>> h = {
      {"Access-Control-Allow-Origin", std::string(origin)},
      {"Vary", "Origin"},
      {"Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version"},
  };
  if (preflight) {
    h.emplace_back("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
    h.emplace_back("Access-Control-Allow-Headers",
                   "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, "
                   "Mcp-Method, Mcp-Name, Last-Event-ID");
    h.emplace_back("Access-Control-Max-Age", "600");
  }
  return h;
}

}  // namespace codeact::internal
