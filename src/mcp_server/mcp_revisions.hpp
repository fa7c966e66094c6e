// McpRevisions: the MCP protocol revisions codeact speaks and every rule that depends on which
// one a message uses, kept apart from the JSON-RPC framing (mcp_jsonrpc) and from HTTP
// (http_server/mcp_http) so both transports apply the same rules.
//
// Two eras (specification/2026-07-28/basic/versioning):
// - Handshake ("legacy") revisions 2025-11-25, 2025-06-18, 2025-03-26 (JSON-RPC batches) and
//   2024-11-05: `initialize` fixes the version for the stdio process or the HTTP session.
//   NegotiateHandshakeRevision answers the version asked for when it is one of them, else the
//   newest of them.
// - The stateless revision 2026-07-28: no handshake; every request names its version and the
//   client's capabilities in `params._meta` (ReadRequestMeta), results carry `resultType`
//   (MarkStatelessResult), `server/discover` says what the server speaks (DiscoverResult), and
//   over HTTP the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers mirror the body
//   (CheckHttpHeaders). A request without that `_meta` is a handshake-era request.
//
// Errors are values (McpRpcError): the JSON-RPC code, message and data, and the HTTP status the
// Streamable HTTP transport answers with. Nothing here throws on untrusted input.
//
// Also here because both eras share it on HTTP: the Origin policy (OriginAllowed: loopback
// listeners accept loopback origins) and the CORS preflight answer.
//
// Internal (codeact::internal); the library's public API does not include it.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace codeact::internal {

// The stateless revision, and the _meta keys every request of it carries.
inline constexpr std::string_view kMcpStatelessRevision = "2026-07-28";
inline constexpr std::string_view kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaClientCapabilities =
    "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view kMetaLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

// JSON-RPC codes: the standard ones and those the 2026-07-28 specification reserves
// (basic/index "Error Codes").
inline constexpr int kJsonRpcParseError = -32700;
inline constexpr int kJsonRpcInvalidRequest = -32600;
inline constexpr int kJsonRpcMethodNotFound = -32601;
inline constexpr int kJsonRpcInvalidParams = -32602;
inline constexpr int kJsonRpcInternalError = -32603;
inline constexpr int kMcpHeaderMismatch = -32020;
inline constexpr int kMcpMissingRequiredClientCapability = -32021;
inline constexpr int kMcpUnsupportedProtocolVersion = -32022;

// Every revision served, newest first: the stateless one, then the handshake ones.
std::span<const std::string_view> SupportedMcpRevisions();
bool IsSupportedMcpRevision(std::string_view version);
// Whether `version` is a revision without a handshake (2026-07-28).
bool IsStatelessMcpRevision(std::string_view version);
// The answer to `initialize` asking for `requested`: that version when it is a supported
// handshake revision, else the newest handshake revision (also for a request naming the
// stateless revision, which has no `initialize`).
std::string_view NegotiateHandshakeRevision(std::string_view requested);
// The one handshake revision with JSON-RPC batches (it requires them; 2025-06-18 removed them).
inline constexpr std::string_view kMcpBatchRevision = "2025-03-26";

// A JSON-RPC error for a request, with the HTTP status Streamable HTTP answers it with.
struct McpRpcError {
  int code = kJsonRpcInvalidRequest;
  std::string message;
  std::optional<boost::json::value> data;
  int http_status = 400;
};

// The error response line. `id_text` is the request's id as JSON text ("null" when unknown).
std::string McpErrorLine(std::string_view id_text, const McpRpcError& error);
// The JSON-RPC error body of a transport refusal on /mcp (no id: the request was not read as
// one): 4xx -> -32600, 5xx -> -32603, with `data.reason` codeact's reason code.
std::string McpTransportErrorBody(int http_status, std::string_view reason,
                                  std::string_view message);

// What a request's params._meta says about its revision.
struct McpRequestMeta {
  // False: no `io.modelcontextprotocol/protocolVersion`, a handshake-era request; nothing else
  // below is set.
  bool stateless = false;
  std::string protocol_version;
  boost::json::object client_capabilities;
  std::string client_name;  // clientInfo, optional; empty when absent
  std::string client_version;
  std::string log_level;  // empty: the request asked for no log notifications
};

// Reads params._meta. A request that names a protocol version must name a supported one
// (-32022 with data {supported, requested}), and a stateless one must carry clientCapabilities
// (an object); clientInfo, when present, is an Implementation ({name, version} strings) and
// logLevel one of the eight syslog levels (-32602 otherwise, HTTP 400). A request naming a
// handshake revision in _meta is served as a handshake-era request (stateless false).
std::variant<McpRequestMeta, McpRpcError> ReadRequestMeta(const boost::json::object& params);

// What the server says about itself in server/discover and in each stateless result's _meta.
struct McpServerIdentity {
  std::string name;
  std::string version;
  std::string instructions;
};

// What the server offers, in initialize and server/discover alike: tools (execute_code),
// resources (the files its calls captured), prompts (its instructions), logging
// (mcp_notifications.hpp); no list changes are announced and no subscriptions offered.
boost::json::object McpServerCapabilities();

// The server/discover result: resultType, supportedVersions (SupportedMcpRevisions),
// capabilities (McpServerCapabilities), serverInfo, instructions, and the cache hints
// ttlMs/cacheScope.
boost::json::object DiscoverResult(const McpServerIdentity& server);

// Adds what every result of a stateless request carries: "resultType": "complete" and
// `_meta["io.modelcontextprotocol/serverInfo"]` (kept beside other _meta keys).
void MarkStatelessResult(boost::json::object& result, const McpServerIdentity& server);

// Methods the stateless revision removed (ping, logging/setLevel) or never had (initialize,
// notifications/initialized are handshake-only): such a request under 2026-07-28 is -32601.
bool RemovedInStatelessRevision(std::string_view method);

// The HTTP headers Streamable HTTP mirrors from the body (absent: nullopt).
struct McpHttpHeaders {
  std::optional<std::string> protocol_version;  // MCP-Protocol-Version
  std::optional<std::string> method;            // Mcp-Method
  std::optional<std::string> name;              // Mcp-Name (maybe =?base64?...?=)
};

// The header rules of Streamable HTTP for one POSTed message (`message` is the parsed body):
// - MCP-Protocol-Version naming no supported revision: 400, -32022 with the supported list
//   (on any request, stateless or not: basic/transports#protocol-version-header).
// - A stateless request (`meta.stateless`): MCP-Protocol-Version, Mcp-Method and, for
//   tools/call, resources/read and prompts/get, Mcp-Name are required and must equal the body's
//   _meta version, method and params.name/params.uri (Mcp-Name decoded from the Base64
//   sentinel first): 400, -32020 otherwise.
// - A handshake-era request: Mcp-Method and Mcp-Name are optional, but when present they must
//   match the body too (an intermediary may have routed on them).
// nullopt: the headers are fine.
std::optional<McpRpcError> CheckHttpHeaders(const McpHttpHeaders& headers,
                                            const boost::json::value& message,
                                            const McpRequestMeta& meta);

// The Origin policy: `origin` (the header's value) is allowed when it is in `allowed` exactly,
// or when the listener is on loopback and it is a loopback origin: http://localhost,
// http://127.0.0.1 or http://[::1], with or without a port.
bool OriginAllowed(std::string_view origin, const std::vector<std::string>& allowed,
                   bool loopback_listener);

// The headers of a CORS answer to an allowed `origin`: on a preflight (OPTIONS) the methods,
// request headers and max age too; on any response Access-Control-Allow-Origin, Vary and the
// headers a browser client may read (Mcp-Session-Id, MCP-Protocol-Version).
std::vector<std::pair<std::string, std::string>> CorsHeaders(std::string_view origin,
                                                             bool preflight);

}  // namespace codeact::internal
