// The MCP revisions as real clients meet them, over both transports: `codeact mcp` on stdio and
// `codeact serve` /mcp. 2026-07-28 requests (server/discover, tools/call) work without
// initialize or Mcp-Session-Id; initialize negotiates 2025-11-25; an unsupported
// MCP-Protocol-Version is 400; routing headers that disagree with the body are 400 -32020;
// refusals on /mcp are JSON-RPC error objects; loopback origins and CORS preflights are allowed.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process/helper_command.hpp"
#include "testing/serve_support.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using testing::Bearer;
using testing::HttpCall;
using testing::HttpResponse;
using testing::ServeProcess;
using testing::TokenServe;

const std::string kToken = "token-revisions-0123456789";

bj::object StatelessMeta() {
  return bj::object{
      {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
      {"io.modelcontextprotocol/clientCapabilities", bj::object{}},
      {"io.modelcontextprotocol/clientInfo", bj::object{{"name", "it"}, {"version", "1"}}}};
}

std::string Discover(int id) {
  return bj::serialize(bj::object{{"jsonrpc", "2.0"},
                                  {"id", id},
                                  {"method", "server/discover"},
                                  {"params", bj::object{{"_meta", StatelessMeta()}}}});
}

std::string StatelessCall(int id, const std::string& code) {
  return bj::serialize(bj::object{{"jsonrpc", "2.0"},
                                  {"id", id},
                                  {"method", "tools/call"},
                                  {"params", bj::object{{"name", "execute_code"},
                                                        {"arguments", bj::object{{"code", code}}},
                                                        {"_meta", StatelessMeta()}}}});
}

std::string Initialize(int id, const std::string& version) {
  return bj::serialize(bj::object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"method", "initialize"},
      {"params", bj::object{{"protocolVersion", version},
                            {"capabilities", bj::object{}},
                            {"clientInfo", bj::object{{"name", "it"}, {"version", "1"}}}}}});
}

// ---- stdio -----------------------------------------------------------------------------------

// Every response `codeact mcp` wrote for `input` (closed afterwards), by id.
std::map<std::string, bj::object> RunStdio(const std::string& input, std::string* err) {
  auto r =
      internal::RunCommand({CODEACT_BINARY, "mcp"}, input, std::chrono::seconds(120), 64 << 20);
  std::map<std::string, bj::object> by_id;
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return by_id;
  *err = r->stderr_text;
  EXPECT_TRUE(r->exit.exited && r->exit.exit_code == 0) << r->stderr_text;
  std::istringstream lines(r->stdout_text);
  std::string line;
  while (std::getline(lines, line)) {
    bj::error_code ec;
    const bj::value v = bj::parse(line, ec);
    EXPECT_FALSE(ec) << line;
    if (!ec && v.is_object()) by_id[bj::serialize(v.at("id"))] = v.as_object();
  }
  return by_id;
}

TEST(McpRevisionsStdioTest, StatelessRequestsNeedNoInitialize) {
  std::string err;
  auto by_id = RunStdio(Discover(1) + "\n" + StatelessCall(2, "print(6 * 7)") + "\n" +
                            R"({"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":)" +
                            bj::serialize(StatelessMeta()) + "}}\n",
                        &err);
  ASSERT_EQ(by_id.size(), 3u) << err;
  const bj::object& discover = by_id["1"].at("result").as_object();
  EXPECT_EQ(discover.at("resultType"), "complete");
  EXPECT_EQ(discover.at("supportedVersions").at(0), "2026-07-28");
  EXPECT_EQ(discover.at("serverInfo").at("name"), "codeact");
  const bj::object& call = by_id["2"].at("result").as_object();
  EXPECT_EQ(call.at("resultType"), "complete");
  EXPECT_EQ(call.at("isError"), false) << bj::serialize(call);
  EXPECT_EQ(call.at("structuredContent").at("stdout"), "42\n");
  EXPECT_EQ(by_id["3"].at("error").at("code"), -32601);  // no ping in 2026-07-28
}

TEST(McpRevisionsStdioTest, InitializeNegotiates20251125AndUnknownMetaVersionIsMinus32022) {
  std::string err;
  auto by_id = RunStdio(
      Initialize(1, "2025-11-25") + "\n" +
          R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}})"
          "\n",
      &err);
  ASSERT_EQ(by_id.size(), 2u) << err;
  EXPECT_EQ(by_id["1"].at("result").at("protocolVersion"), "2025-11-25");
  EXPECT_EQ(by_id["2"].at("error").at("code"), -32022);
  EXPECT_EQ(by_id["2"].at("error").at("data").at("requested"), "1900-01-01");
}

// ---- Streamable HTTP -------------------------------------------------------------------------

class McpRevisionsServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serve_ = new TokenServe("mcp-revisions", {kToken}, [](const fs::path&) {
      return std::vector<std::string>{"--isolation", "process", "--timeout", "20"};
    });
  }
  static void TearDownTestSuite() { delete serve_; }
  static ServeProcess& server() { return serve_->server(); }
  void SetUp() override { ASSERT_NE(server().port(), 0) << server().Stderr(); }

  // POST /mcp with the token and Accept of a Streamable HTTP client, plus `headers`.
  static HttpResponse Post(const std::string& body, testing::Headers headers = {}) {
    headers.emplace_back("Accept", "application/json, text/event-stream");
    return HttpCall(server().port(), "POST", "/mcp", body, Bearer(kToken, std::move(headers)));
  }
  // The headers a 2026-07-28 client mirrors from a body of `method` (and `name`).
  static testing::Headers Mirrored(const std::string& method, const std::string& name = "") {
    testing::Headers h = {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", method}};
    if (!name.empty()) h.emplace_back("Mcp-Name", name);
    return h;
  }

  static TokenServe* serve_;
};
TokenServe* McpRevisionsServeTest::serve_ = nullptr;

TEST_F(McpRevisionsServeTest, StatelessDiscoverAndToolsCallNeedNoSession) {
  const HttpResponse discover = Post(Discover(1), Mirrored("server/discover"));
  ASSERT_EQ(discover.status, 200) << discover.body;
  EXPECT_TRUE(discover.Header("mcp-session-id").empty());
  EXPECT_EQ(discover.Json().at("result").at("supportedVersions").at(0), "2026-07-28");
  EXPECT_EQ(discover.Json().at("result").at("resultType"), "complete");

  const HttpResponse call =
      Post(StatelessCall(2, "print('stateless')"), Mirrored("tools/call", "execute_code"));
  ASSERT_EQ(call.status, 200) << call.body;
  EXPECT_TRUE(call.Header("mcp-session-id").empty());
  const bj::value result = call.Json().at("result");
  EXPECT_EQ(result.at("resultType"), "complete");
  EXPECT_EQ(result.at("structuredContent").at("stdout"), "stateless\n") << call.body;

  // A method the server does not implement is 404 with -32601 under 2026-07-28.
  const HttpResponse missing =
      Post(bj::serialize(bj::object{{"jsonrpc", "2.0"},
                                    {"id", 3},
                                    {"method", "completion/complete"},
                                    {"params", bj::object{{"_meta", StatelessMeta()}}}}),
           Mirrored("completion/complete"));
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_EQ(missing.Json().at("error").at("code"), -32601);
}

TEST_F(McpRevisionsServeTest, HeadersThatDisagreeWithTheBodyAre400HeaderMismatch) {
  const HttpResponse wrong_name =
      Post(StatelessCall(1, "print(1)"), Mirrored("tools/call", "other_tool"));
  EXPECT_EQ(wrong_name.status, 400) << wrong_name.body;
  EXPECT_EQ(wrong_name.Json().at("error").at("code"), -32020);
  EXPECT_EQ(wrong_name.Json().at("id"), 1);
  const HttpResponse no_method = Post(Discover(2), {{"MCP-Protocol-Version", "2026-07-28"}});
  EXPECT_EQ(no_method.status, 400);
  EXPECT_EQ(no_method.Json().at("error").at("code"), -32020);
  // The _meta without clientCapabilities: -32602, 400.
  const HttpResponse partial = Post(
      R"({"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})",
      Mirrored("server/discover"));
  EXPECT_EQ(partial.status, 400);
  EXPECT_EQ(partial.Json().at("error").at("code"), -32602);
}

TEST_F(McpRevisionsServeTest, InitializeNegotiates20251125AndABadVersionHeaderIs400) {
  const HttpResponse init = Post(Initialize(1, "2025-11-25"));
  ASSERT_EQ(init.status, 200) << init.body;
  EXPECT_EQ(init.Json().at("result").at("protocolVersion"), "2025-11-25");
  const std::string session = init.Header("mcp-session-id");
  ASSERT_FALSE(session.empty());
  const std::string list = R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})";
  const HttpResponse bad =
      Post(list, {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "1999-01-01"}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.Json().at("error").at("code"), -32022);
  EXPECT_EQ(bad.Json().at("error").at("data").at("requested"), "1999-01-01");
  const HttpResponse good =
      Post(list, {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-11-25"}});
  EXPECT_EQ(good.status, 200) << good.body;
}

TEST_F(McpRevisionsServeTest, TransportRefusalsAreJsonRpcErrorObjects) {
  // A handshake-era request without a session.
  const HttpResponse no_session = Post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  EXPECT_EQ(no_session.status, 400);
  EXPECT_EQ(no_session.Json().at("jsonrpc"), "2.0");
  EXPECT_TRUE(no_session.Json().at("id").is_null());
  EXPECT_EQ(no_session.Json().at("error").at("code"), -32600);
  EXPECT_EQ(no_session.Json().at("error").at("data").at("reason"), "bad_request");
  // An unknown session, and a missing token.
  const HttpResponse unknown =
      Post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", {{"Mcp-Session-Id", "mcp_x"}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.Json().at("error").at("data").at("reason"), "mcp_session_not_found");
  const HttpResponse anonymous = HttpCall(server().port(), "POST", "/mcp", Discover(1));
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.Json().at("error").at("code"), -32600);
  EXPECT_EQ(anonymous.Header("www-authenticate"), "Bearer");
}

TEST_F(McpRevisionsServeTest, LoopbackOriginsAreAllowedAndPreflightsAnswered) {
  const HttpResponse local = Post(Discover(1), [] {
    testing::Headers h = Mirrored("server/discover");
    h.emplace_back("Origin", "http://localhost:6274");
    return h;
  }());
  EXPECT_EQ(local.status, 200) << local.body;
  EXPECT_EQ(local.Header("access-control-allow-origin"), "http://localhost:6274");
  const HttpResponse evil = Post(Discover(2), {{"Origin", "http://evil.example"}});
  EXPECT_EQ(evil.status, 403);
  EXPECT_EQ(evil.Json().at("error").at("data").at("reason"), "forbidden_origin");
  EXPECT_TRUE(evil.Header("access-control-allow-origin").empty());
  const HttpResponse preflight =
      HttpCall(server().port(), "OPTIONS", "/mcp", "",
               {{"Origin", "http://127.0.0.1:5173"},
                {"Access-Control-Request-Method", "POST"},
                {"Access-Control-Request-Headers", "mcp-protocol-version, content-type"}});
  EXPECT_EQ(preflight.status, 204) << preflight.body;
  EXPECT_EQ(preflight.Header("access-control-allow-origin"), "http://127.0.0.1:5173");
  EXPECT_NE(preflight.Header("access-control-allow-headers").find("MCP-Protocol-Version"),
            std::string::npos);
}

// notifications/cancelled POSTed in the same MCP session ends the run of a tools/call another
// POST is waiting for; /metrics counts it as cancelled.
TEST_F(McpRevisionsServeTest, NotificationsCancelledEndsARunOverHttp) {
  const HttpResponse init = Post(Initialize(1, "2025-11-25"));
  ASSERT_EQ(init.status, 200) << init.body;
  const std::string session = init.Header("mcp-session-id");
  const std::string call = bj::serialize(bj::object{
      {"jsonrpc", "2.0"},
      {"id", 9},
      {"method", "tools/call"},
      {"params", bj::object{{"name", "execute_code"},
                            {"arguments", bj::object{{"code", "import time\ntime.sleep(30)"}}}}}});
  const auto started = std::chrono::steady_clock::now();
  std::atomic<bool> answered{false};
  HttpResponse reply;
  std::thread caller([&] {
    reply = Post(call, {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-11-25"}});
    answered.store(true);
  });
  // Sent until the call is answered: one that arrives before the run starts finds nothing.
  const std::string cancel =
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"user abort"}})";
  while (!answered.load() &&
         std::chrono::steady_clock::now() - started < std::chrono::seconds(25)) {
    const HttpResponse r = Post(cancel, {{"Mcp-Session-Id", session}});
    EXPECT_EQ(r.status, 202) << r.body;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.Json().at("result").at("structuredContent").at("outcome"), "cancelled")
      << reply.body;
  const HttpResponse metrics = HttpCall(server().port(), "GET", "/metrics", "", Bearer(kToken, {}));
  EXPECT_NE(metrics.body.find("codeact_executions_total{outcome=\"cancelled\"}"), std::string::npos)
      << metrics.body;
}

// A tools/call with a progressToken, from a client that accepts SSE, gets its progress
// notifications (every 5 s) on the response stream before its result, stateless or not.
TEST_F(McpRevisionsServeTest, ProgressNotificationsStreamBeforeTheResult) {
  bj::object params{
      {"name", "execute_code"},
      {"arguments", bj::object{{"code", "import time\ntime.sleep(6)\nprint('done')"}}}};
  bj::object meta = StatelessMeta();
  meta["progressToken"] = "p-1";
  params["_meta"] = meta;
  const HttpResponse r =
      Post(bj::serialize(bj::object{
               {"jsonrpc", "2.0"}, {"id", 5}, {"method", "tools/call"}, {"params", params}}),
           Mirrored("tools/call", "execute_code"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("content-type"), "text/event-stream");
  std::vector<bj::value> events;
  std::istringstream lines(r.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("data: ", 0) == 0) events.push_back(bj::parse(line.substr(6)));
  }
  ASSERT_GE(events.size(), 2u) << r.body;
  EXPECT_EQ(events.front().at("method"), "notifications/progress");
  EXPECT_EQ(events.front().at("params").at("progressToken"), "p-1");
  EXPECT_EQ(events.back().at("id"), 5);
  EXPECT_EQ(events.back().at("result").at("structuredContent").at("stdout"), "done\n") << r.body;
}

}  // namespace
}  // namespace codeact
