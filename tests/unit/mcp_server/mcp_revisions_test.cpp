// McpRevisions: revision negotiation, the 2026-07-28 per-request _meta, server/discover,
// resultType, the Streamable HTTP header rules, the Origin policy and CORS. Pure functions: no
// server, no transport.
#include "mcp_server/mcp_revisions.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

namespace codeact {
namespace {
namespace json = boost::json;
using internal::McpHttpHeaders;
using internal::McpRequestMeta;
using internal::McpRpcError;

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

// params whose _meta names `version` with empty client capabilities.
json::object StatelessParams(std::string_view version = "2026-07-28") {
  return json::object{{"_meta", json::object{{internal::kMetaProtocolVersion, version},
                                             {internal::kMetaClientCapabilities, json::object{}}}}};
}

McpRequestMeta MetaOf(const json::object& params) {
  auto read = internal::ReadRequestMeta(params);
  EXPECT_TRUE(std::holds_alternative<McpRequestMeta>(read)) << std::get<McpRpcError>(read).message;
  return std::holds_alternative<McpRequestMeta>(read) ? std::get<McpRequestMeta>(read)
                                                      : McpRequestMeta{};
}

McpRpcError ErrorOf(const json::object& params) {
  auto read = internal::ReadRequestMeta(params);
  EXPECT_TRUE(std::holds_alternative<McpRpcError>(read));
  return std::holds_alternative<McpRpcError>(read) ? std::get<McpRpcError>(read) : McpRpcError{};
}

TEST(McpRevisionsTest, ListsEveryRevisionNewestFirst) {
  const auto revisions = internal::SupportedMcpRevisions();
  ASSERT_EQ(revisions.size(), 5u);
  EXPECT_EQ(revisions[0], "2026-07-28");
  EXPECT_EQ(revisions[1], "2025-11-25");
  EXPECT_EQ(revisions[2], "2025-06-18");
  EXPECT_EQ(revisions[3], "2025-03-26");
  EXPECT_EQ(revisions[4], "2024-11-05");
  EXPECT_TRUE(internal::IsStatelessMcpRevision("2026-07-28"));
  EXPECT_FALSE(internal::IsStatelessMcpRevision("2025-11-25"));
  EXPECT_FALSE(internal::IsSupportedMcpRevision("1999-01-01"));
}

TEST(McpRevisionsTest, InitializeIsAnsweredTheHandshakeRevisionItAskedFor) {
  EXPECT_EQ(internal::NegotiateHandshakeRevision("2025-11-25"), "2025-11-25");
  EXPECT_EQ(internal::NegotiateHandshakeRevision("2025-06-18"), "2025-06-18");
  EXPECT_EQ(internal::NegotiateHandshakeRevision("2025-03-26"), "2025-03-26");
  EXPECT_EQ(internal::NegotiateHandshakeRevision("2024-11-05"), "2024-11-05");
  // Unknown, or the stateless revision (which has no initialize): the newest handshake one.
  EXPECT_EQ(internal::NegotiateHandshakeRevision("2099-01-01"), "2025-11-25");
  EXPECT_EQ(internal::NegotiateHandshakeRevision("2026-07-28"), "2025-11-25");
}

TEST(McpRevisionsTest, RequestWithoutProtocolVersionMetaIsHandshakeEra) {
  EXPECT_FALSE(MetaOf(json::object{}).stateless);
  EXPECT_FALSE(MetaOf(Obj(R"({"_meta":{"progressToken":7}})")).stateless);
  // A handshake revision named per request is served as before.
  EXPECT_FALSE(MetaOf(StatelessParams("2025-06-18")).stateless);
}

TEST(McpRevisionsTest, ReadsTheStatelessMeta) {
  const McpRequestMeta meta = MetaOf(Obj(R"({"_meta":{
      "io.modelcontextprotocol/protocolVersion":"2026-07-28",
      "io.modelcontextprotocol/clientCapabilities":{"extensions":{"x.y/z":{}}},
      "io.modelcontextprotocol/clientInfo":{"name":"probe","version":"1.2.3"},
      "io.modelcontextprotocol/logLevel":"warning"}})"));
  EXPECT_TRUE(meta.stateless);
  EXPECT_EQ(meta.protocol_version, "2026-07-28");
  EXPECT_TRUE(meta.client_capabilities.contains("extensions"));
  EXPECT_EQ(meta.client_name, "probe");
  EXPECT_EQ(meta.client_version, "1.2.3");
  EXPECT_EQ(meta.log_level, "warning");
}

TEST(McpRevisionsTest, UnsupportedVersionIsMinus32022WithTheSupportedList) {
  const McpRpcError e = ErrorOf(StatelessParams("1900-01-01"));
  EXPECT_EQ(e.code, -32022);
  EXPECT_EQ(e.http_status, 400);
  ASSERT_TRUE(e.data.has_value());
  EXPECT_EQ(e.data->at("requested").as_string(), "1900-01-01");
  const json::array& supported = e.data->at("supported").as_array();
  ASSERT_EQ(supported.size(), 5u);
  EXPECT_EQ(supported[0].as_string(), "2026-07-28");
  EXPECT_EQ(supported[1].as_string(), "2025-11-25");
  const std::string line = internal::McpErrorLine("7", e);
  const json::value parsed = json::parse(line);
  EXPECT_EQ(parsed.at("id").as_int64(), 7);
  EXPECT_EQ(parsed.at("error").at("code").as_int64(), -32022);
  EXPECT_EQ(parsed.at("error").at("data").at("requested").as_string(), "1900-01-01");
}

TEST(McpRevisionsTest, MissingOrMalformedRequiredMetaIsInvalidParams) {
  // No clientCapabilities.
  McpRpcError e =
      ErrorOf(Obj(R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}})"));
  EXPECT_EQ(e.code, -32602);
  EXPECT_EQ(e.http_status, 400);
  EXPECT_NE(e.message.find("clientCapabilities"), std::string::npos) << e.message;
  // clientCapabilities not an object.
  e = ErrorOf(Obj(R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities":[]}})"));
  EXPECT_EQ(e.code, -32602);
  // The version not a string.
  e = ErrorOf(Obj(R"({"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}})"));
  EXPECT_EQ(e.code, -32602);
  // _meta not an object.
  e = ErrorOf(Obj(R"({"_meta":"x"})"));
  EXPECT_EQ(e.code, -32602);
  // clientInfo without a version; a logLevel that is no level.
  json::object p = StatelessParams();
  p["_meta"].as_object()[internal::kMetaClientInfo] = json::object{{"name", "x"}};
  EXPECT_EQ(ErrorOf(p).code, -32602);
  p = StatelessParams();
  p["_meta"].as_object()[internal::kMetaLogLevel] = "verbose";
  EXPECT_EQ(ErrorOf(p).code, -32602);
}

TEST(McpRevisionsTest, DiscoverSaysVersionsCapabilitiesIdentityAndCacheHints) {
  const json::object d = internal::DiscoverResult({"codeact", "9.9.9", "run Python"});
  EXPECT_EQ(d.at("resultType").as_string(), "complete");
  ASSERT_EQ(d.at("supportedVersions").as_array().size(), 5u);
  EXPECT_EQ(d.at("supportedVersions").as_array()[0].as_string(), "2026-07-28");
  EXPECT_TRUE(d.at("capabilities").as_object().contains("tools"));
  EXPECT_EQ(d.at("serverInfo").at("name").as_string(), "codeact");
  EXPECT_EQ(d.at("serverInfo").at("version").as_string(), "9.9.9");
  EXPECT_EQ(d.at("instructions").as_string(), "run Python");
  EXPECT_GT(d.at("ttlMs").as_int64(), 0);
  EXPECT_EQ(d.at("cacheScope").as_string(), "public");
}

TEST(McpRevisionsTest, StatelessResultsCarryResultTypeAndServerInfo) {
  json::object result = Obj(R"({"tools":[],"_meta":{"com.example/x":1}})");
  internal::MarkStatelessResult(result, {"codeact", "1.0", ""});
  EXPECT_EQ(result.at("resultType").as_string(), "complete");
  EXPECT_EQ(result.at("_meta").at("com.example/x").as_int64(), 1);
  EXPECT_EQ(result.at("_meta").at("io.modelcontextprotocol/serverInfo").at("name").as_string(),
            "codeact");
  EXPECT_TRUE(internal::RemovedInStatelessRevision("ping"));
  EXPECT_TRUE(internal::RemovedInStatelessRevision("logging/setLevel"));
  EXPECT_FALSE(internal::RemovedInStatelessRevision("tools/list"));
}

// A stateless tools/call of execute_code and the headers that mirror it.
json::value StatelessCall() {
  json::object params = StatelessParams();
  params["name"] = "execute_code";
  return json::object{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", params}};
}

McpHttpHeaders CallHeaders() { return McpHttpHeaders{"2026-07-28", "tools/call", "execute_code"}; }

TEST(McpRevisionsTest, MatchingHeadersPass) {
  const json::value call = StatelessCall();
  const McpRequestMeta meta = MetaOf(call.at("params").as_object());
  EXPECT_FALSE(internal::CheckHttpHeaders(CallHeaders(), call, meta).has_value());
  // Mcp-Name in the Base64 sentinel ("execute_code").
  McpHttpHeaders h = CallHeaders();
  h.name = "=?base64?ZXhlY3V0ZV9jb2Rl?=";
  EXPECT_FALSE(internal::CheckHttpHeaders(h, call, meta).has_value());
}

TEST(McpRevisionsTest, StatelessRequestNeedsEveryMirroredHeader) {
  const json::value call = StatelessCall();
  const McpRequestMeta meta = MetaOf(call.at("params").as_object());
  for (int missing = 0; missing < 3; ++missing) {
    McpHttpHeaders h = CallHeaders();
    if (missing == 0) h.protocol_version.reset();
    if (missing == 1) h.method.reset();
    if (missing == 2) h.name.reset();
    const auto e = internal::CheckHttpHeaders(h, call, meta);
    ASSERT_TRUE(e.has_value()) << missing;
    EXPECT_EQ(e->code, -32020);
    EXPECT_EQ(e->http_status, 400);
  }
}

TEST(McpRevisionsTest, HeadersThatDisagreeWithTheBodyAreHeaderMismatch) {
  const json::value call = StatelessCall();
  const McpRequestMeta meta = MetaOf(call.at("params").as_object());
  McpHttpHeaders h = CallHeaders();
  h.method = "tools/list";
  auto e = internal::CheckHttpHeaders(h, call, meta);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, -32020);
  EXPECT_NE(e->message.find("Mcp-Method"), std::string::npos) << e->message;
  h = CallHeaders();
  h.name = "other_tool";
  e = internal::CheckHttpHeaders(h, call, meta);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, -32020);
  EXPECT_NE(e->message.find("'other_tool'"), std::string::npos) << e->message;
  h = CallHeaders();
  h.name = "=?base64?!!!?=";
  EXPECT_EQ(internal::CheckHttpHeaders(h, call, meta)->code, -32020);
  // A supported version in the header that is not the body's.
  h = CallHeaders();
  h.protocol_version = "2025-11-25";
  EXPECT_EQ(internal::CheckHttpHeaders(h, call, meta)->code, -32020);
  // Control characters.
  h = CallHeaders();
  h.method = std::string("tools/call\x01");
  EXPECT_EQ(internal::CheckHttpHeaders(h, call, meta)->code, -32020);
}

TEST(McpRevisionsTest, UnsupportedVersionHeaderIs400OnEveryRequest) {
  // A handshake-era tools/list in a session, with a version nobody speaks.
  const json::value list = json::parse(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  McpHttpHeaders h;
  h.protocol_version = "1999-01-01";
  const auto e = internal::CheckHttpHeaders(h, list, McpRequestMeta{});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, -32022);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->data->at("requested").as_string(), "1999-01-01");
  // A supported one, and none at all, pass; so do handshake requests without Mcp-Method.
  h.protocol_version = "2025-06-18";
  EXPECT_FALSE(internal::CheckHttpHeaders(h, list, McpRequestMeta{}).has_value());
  EXPECT_FALSE(internal::CheckHttpHeaders(McpHttpHeaders{}, list, McpRequestMeta{}).has_value());
  // But a handshake request's Mcp-Method, when sent, must match too.
  h.method = "tools/call";
  EXPECT_EQ(internal::CheckHttpHeaders(h, list, McpRequestMeta{})->code, -32020);
}

TEST(McpRevisionsTest, ResourcesReadMirrorsTheUri) {
  json::object params = StatelessParams();
  params["uri"] = "file:///out/a.csv";
  const json::value read =
      json::object{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "resources/read"}, {"params", params}};
  const McpRequestMeta meta = MetaOf(params);
  EXPECT_FALSE(
      internal::CheckHttpHeaders({"2026-07-28", "resources/read", "file:///out/a.csv"}, read, meta)
          .has_value());
  EXPECT_EQ(
      internal::CheckHttpHeaders({"2026-07-28", "resources/read", "file:///out/b.csv"}, read, meta)
          ->code,
      -32020);
}

TEST(McpRevisionsTest, TransportErrorsAreJsonRpcErrorObjects) {
  const json::value body = json::parse(internal::McpTransportErrorBody(
      404, "mcp_session_not_found", "no MCP session with this Mcp-Session-Id"));
  EXPECT_EQ(body.at("jsonrpc").as_string(), "2.0");
  EXPECT_TRUE(body.at("id").is_null());
  EXPECT_EQ(body.at("error").at("code").as_int64(), -32600);
  EXPECT_EQ(body.at("error").at("message").as_string(), "no MCP session with this Mcp-Session-Id");
  EXPECT_EQ(body.at("error").at("data").at("reason").as_string(), "mcp_session_not_found");
  const json::value internal_error =
      json::parse(internal::McpTransportErrorBody(503, "shutting_down", "bye"));
  EXPECT_EQ(internal_error.at("error").at("code").as_int64(), -32603);
}

TEST(McpRevisionsTest, LoopbackListenerAllowsLoopbackOrigins) {
  const std::vector<std::string> none;
  for (const char* origin : {"http://localhost", "http://localhost:3000", "http://LOCALHOST:1",
                             "http://127.0.0.1:8080", "http://[::1]:6274", "http://[::1]"}) {
    EXPECT_TRUE(internal::OriginAllowed(origin, none, /*loopback_listener=*/true)) << origin;
    EXPECT_FALSE(internal::OriginAllowed(origin, none, /*loopback_listener=*/false)) << origin;
  }
  for (const char* origin :
       {"http://evil.example", "http://localhost.evil.example:80", "https://evil.example",
        "http://127.0.0.1.nip.io", "http://localhost:0", "http://localhost:65536",
        "http://localhost:80/path", "http://localhost:", "null", "http://[::2]:80",
        "http://localhost@evil.example"}) {
    EXPECT_FALSE(internal::OriginAllowed(origin, none, /*loopback_listener=*/true)) << origin;
  }
  // --allow-origin adds exact origins, on any listener.
  const std::vector<std::string> allowed = {"https://app.example"};
  EXPECT_TRUE(internal::OriginAllowed("https://app.example", allowed, false));
  EXPECT_FALSE(internal::OriginAllowed("https://app.example:8443", allowed, false));
}

TEST(McpRevisionsTest, CorsPreflightNamesTheOriginMethodsAndMcpHeaders) {
  const auto headers = internal::CorsHeaders("http://localhost:6274", /*preflight=*/true);
  auto find = [&](std::string_view name) -> std::string {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return "";
  };
  EXPECT_EQ(find("Access-Control-Allow-Origin"), "http://localhost:6274");
  EXPECT_EQ(find("Vary"), "Origin");
  EXPECT_NE(find("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  for (const char* h : {"Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name",
                        "Authorization", "Content-Type"}) {
    EXPECT_NE(find("Access-Control-Allow-Headers").find(h), std::string::npos) << h;
  }
  EXPECT_NE(find("Access-Control-Expose-Headers").find("Mcp-Session-Id"), std::string::npos);
  EXPECT_EQ(internal::CorsHeaders("http://localhost", false).size(), 3u);
}

}  // namespace
}  // namespace codeact
