// McpServer without stdio and without Python: a provider with a fake validator and a fake
// executor, wired exactly as `codeact mcp` wires the real one.
#include "mcp_server/mcp_server.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codeact/provider.hpp"
#include "testing/fake_executor.hpp"
#include "testing/fake_validator.hpp"
#include "unit/mcp_server/mcp_server_fixture.hpp"

namespace codeact {
namespace {

using namespace mcp_server_test;  // NOLINT(build/namespaces): the fixture and its aliases
using internal::McpServer;
using internal::McpServerOptions;  // not codeact::McpServerOptions

TEST_F(McpServerTest, InitializeAnswersASupportedVersionAsAsked) {
  McpServer server(Options());
  for (const char* version : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    const json::object r = Ask(server, InitializeLine(version));
    EXPECT_EQ(r.at("id"), 0);
    const json::object& result = r.at("result").as_object();
    EXPECT_EQ(result.at("protocolVersion"), version);
    EXPECT_EQ(result.at("capabilities"),
              json::parse(R"({"tools":{"listChanged":false},)"
                          R"("resources":{"listChanged":false,"subscribe":false},)"
                          R"("prompts":{"listChanged":false},"logging":{}})"));
    EXPECT_EQ(result.at("serverInfo"), json::parse(R"({"name":"codeact","version":"9.9.9"})"));
    EXPECT_EQ(result.at("instructions"), "use execute_code well");
  }
}

TEST_F(McpServerTest, InitializeAnswersTheLatestForAnUnsupportedVersion) {
  McpServer server(Options());
  // The stateless revision has no initialize: its asker gets the newest handshake revision too.
  for (const char* version : {"1999-01-01", "2099-12-31", "", "2026-07-28"}) {
    const json::object r = Ask(server, InitializeLine(version));
    EXPECT_EQ(r.at("result").at("protocolVersion"), "2025-11-25") << version;
  }
}

// A 2026-07-28 request: `method` with `params` (an object) plus the per-request _meta.
std::string StatelessLine(int id, std::string_view method, json::object params = {}) {
  params["_meta"] = json::object{
      {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
      {"io.modelcontextprotocol/clientCapabilities", json::object{}},
      {"io.modelcontextprotocol/clientInfo", json::object{{"name", "t"}, {"version", "1"}}}};
  return json::serialize(
      json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
}

TEST_F(McpServerTest, StatelessDiscoverNeedsNoInitialize) {
  McpServer server(Options());
  const json::object r = Ask(server, StatelessLine(1, "server/discover"));
  const json::object& result = r.at("result").as_object();
  EXPECT_EQ(result.at("resultType"), "complete");
  EXPECT_EQ(result.at("supportedVersions").at(0), "2026-07-28");
  EXPECT_EQ(result.at("supportedVersions").at(1), "2025-11-25");
  EXPECT_EQ(result.at("serverInfo"), json::parse(R"({"name":"codeact","version":"9.9.9"})"));
  EXPECT_EQ(result.at("instructions"), "use execute_code well");
  EXPECT_TRUE(result.at("capabilities").as_object().contains("tools"));
  // Without the _meta it is a malformed request.
  const json::object bare =
      Ask(server, R"({"jsonrpc":"2.0","id":2,"method":"server/discover","params":{}})");
  EXPECT_EQ(ErrorCode(bare), -32602);
}

TEST_F(McpServerTest, StatelessToolsListAndCallCarryResultTypeAndServerInfo) {
  McpServer server(Options());
  const json::object list = Ask(server, StatelessLine(1, "tools/list"));
  EXPECT_EQ(list.at("result").at("resultType"), "complete");
  EXPECT_EQ(list.at("result").at("tools").as_array().size(), 1u);
  EXPECT_EQ(list.at("result").at("cacheScope"), "private");
  EXPECT_EQ(list.at("result").at("_meta").at("io.modelcontextprotocol/serverInfo").at("name"),
            "codeact");
  const json::object call = Ask(
      server, StatelessLine(2, "tools/call",
                            json::object{{"name", "execute_code"},
                                         {"arguments", json::object{{"code", "print('hello')"}}}}));
  const json::object& result = call.at("result").as_object();
  EXPECT_EQ(result.at("resultType"), "complete");
  EXPECT_EQ(result.at("isError"), false);
  EXPECT_EQ(result.at("structuredContent").at("stdout"), "hello\n");
  // A handshake-era call of the same server stays as it was: no resultType.
  const json::object legacy = Ask(server, CallLine(3, json::object{{"code", "print('hello')"}}));
  EXPECT_FALSE(legacy.at("result").as_object().contains("resultType"));
}

TEST_F(McpServerTest, StatelessRevisionErrorsAreTheSpecsCodes) {
  McpServer server(Options());
  // ping and logging/setLevel are gone in 2026-07-28.
  EXPECT_EQ(ErrorCode(Ask(server, StatelessLine(1, "ping"))), -32601);
  EXPECT_EQ(ErrorCode(Ask(server, StatelessLine(2, "logging/setLevel"))), -32601);
  // An unsupported version names the supported ones.
  const json::object unsupported = Ask(
      server,
      R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}})");
  EXPECT_EQ(ErrorCode(unsupported), -32022);
  EXPECT_EQ(unsupported.at("id"), 3);
  EXPECT_EQ(unsupported.at("error").at("data").at("requested"), "1900-01-01");
  EXPECT_EQ(unsupported.at("error").at("data").at("supported").at(0), "2026-07-28");
  // The version without clientCapabilities is malformed.
  const json::object partial = Ask(
      server,
      R"({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
  EXPECT_EQ(ErrorCode(partial), -32602);
}

TEST_F(McpServerTest, InitializeWithoutAProtocolVersionIsInvalidParams) {
  McpServer server(Options());
  const json::object r =
      Ask(server, R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{}})");
  EXPECT_EQ(ErrorCode(r), -32602);
  EXPECT_EQ(r.at("id"), "init");
  const json::object r2 = Ask(
      server,
      R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":20250618}})");
  EXPECT_EQ(ErrorCode(r2), -32602);
}

TEST_F(McpServerTest, PingAnswersAnEmptyResultEvenBeforeInitialize) {
  McpServer server(Options());
  const json::object r = Ask(server, R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
  EXPECT_EQ(r.at("id"), 7);
  EXPECT_EQ(r.at("result"), json::object{});
}

TEST_F(McpServerTest, ToolsListHasExactlyExecuteCode) {
  McpServer server(Options());
  const json::object r =
      Ask(server, R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})");
  const json::array& tools = r.at("result").at("tools").as_array();
  ASSERT_EQ(tools.size(), 1u);
  const json::object& tool = tools[0].as_object();
  EXPECT_EQ(tool.at("name"), "execute_code");
  EXPECT_TRUE(tool.at("description").is_string());
  EXPECT_FALSE(tool.at("description").as_string().empty());
  const json::object& schema = tool.at("inputSchema").as_object();
  EXPECT_EQ(schema.at("type"), "object");
  EXPECT_EQ(schema.at("properties").at("code").at("type"), "string");
  EXPECT_EQ(schema.at("required"), json::array{"code"});
  EXPECT_FALSE(r.at("result").as_object().contains("nextCursor"));
  // No params at all is fine too.
  const json::object r2 = Ask(server, R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  EXPECT_EQ(r2.at("result").at("tools").as_array().size(), 1u);
}

TEST_F(McpServerTest, ToolsCallSuccessHasTextAndStructuredContent) {
  McpServer server(Options());
  const json::object r = Ask(server, CallLine(11, json::object{{"code", "print('hello')"}}));
  EXPECT_EQ(r.at("id"), 11);
  const json::object& result = r.at("result").as_object();
  EXPECT_EQ(result.at("isError"), false);
  const json::object& sc = result.at("structuredContent").as_object();
  EXPECT_EQ(sc.at("success"), true);
  EXPECT_EQ(sc.at("outcome"), "ok");
  EXPECT_EQ(sc.at("exit_code"), 0);
  EXPECT_EQ(sc.at("stdout"), "hello\n");
  EXPECT_EQ(sc.at("stderr"), "warn\n");
  EXPECT_EQ(sc.at("output"), 42);
  EXPECT_EQ(sc.at("tool_calls"), 1);
  EXPECT_EQ(sc.at("backend"), "local");
  for (const char* key : {"stdout_truncated", "stderr_truncated", "output_present", "error",
                          "violations", "files", "omitted_files", "duration_ms", "isolation"}) {
    EXPECT_TRUE(sc.contains(key)) << key;
  }
  const json::array& content = result.at("content").as_array();
  ASSERT_EQ(content.size(), 1u);
  EXPECT_EQ(content[0].at("type"), "text");
  // The text is the result JSON, as the spec recommends beside structuredContent.
  EXPECT_EQ(json::parse(content[0].at("text").as_string()), result.at("structuredContent"));
  ASSERT_EQ(seen_arguments_.size(), 1u);
  const json::value sent = json::object{{"code", "print('hello')"}};
  EXPECT_EQ(json::parse(seen_arguments_[0]), sent);
}

TEST_F(McpServerTest, ToolsCallUserErrorIsAToolErrorNotAProtocolError) {
  McpServer server(Options());
  const json::object r =
      Ask(server, CallLine("c1", json::object{{"code", "x = 1\nraise ValueError"}}));
  EXPECT_EQ(r.at("id"), "c1");
  ASSERT_TRUE(r.contains("result")) << json::serialize(r);
  const json::object& result = r.at("result").as_object();
  EXPECT_EQ(result.at("isError"), true);
  const json::object& sc = result.at("structuredContent").as_object();
  EXPECT_EQ(sc.at("success"), false);
  EXPECT_EQ(sc.at("outcome"), "error");
  EXPECT_EQ(sc.at("exit_code"), 1);
  EXPECT_EQ(sc.at("error").at("type"), "ZeroDivisionError");
  const json::value text = json::parse(result.at("content").at(0).at("text").as_string());
  EXPECT_EQ(text.at("error").at("type"), "ZeroDivisionError");
  EXPECT_EQ(text.at("omitted_files").at(0).at("path"), "/out/big.bin");
  EXPECT_NE(text.at("error").at("traceback").as_string().find("Traceback (most recent call last)"),
            std::string::npos);
}

TEST_F(McpServerTest, ToolsCallValidationFailureListsTheViolations) {
  McpServer server(Options());
  const json::object r = Ask(server, CallLine(3, json::object{{"code", "import os"}}));
  const json::object& result = r.at("result").as_object();
  EXPECT_EQ(result.at("isError"), true);
  EXPECT_EQ(result.at("structuredContent").at("outcome"), "validation_failed");
  EXPECT_EQ(result.at("structuredContent").at("violations").at(0).at("rule"), "import-blocked");
  const json::value text = json::parse(result.at("content").at(0).at("text").as_string());
  EXPECT_EQ(text.at("violations").at(0).at("message"), "import of \"os\" is not allowed");
  EXPECT_EQ(text.at("violations").at(0).at("hint"), "use the mounts");
}

TEST_F(McpServerTest, MissingOrWrongArgumentsAreTheProvidersArgumentError) {
  McpServer server(Options());
  const std::string no_arguments =
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code"}})";
  for (const std::string& line :
       {no_arguments, CallLine(2, "print(1)"), CallLine(3, json::object{{"code", 5}}),
        CallLine(4, json::object{{"code", "   "}}), CallLine(5, json::object{})}) {
    const json::object r = Ask(server, line);
    ASSERT_TRUE(r.contains("result")) << line << " -> " << json::serialize(r);
    const json::object& result = r.at("result").as_object();
    EXPECT_EQ(result.at("isError"), true) << line;
    EXPECT_EQ(result.at("structuredContent").at("outcome"), "validation_failed") << line;
    EXPECT_EQ(result.at("structuredContent").at("violations").at(0).at("rule"), "argument-error")
        << line;
    EXPECT_NE(result.at("content").at(0).at("text").as_string().find("argument-error"),
              std::string::npos);
  }
}

TEST_F(McpServerTest, UnknownToolIsInvalidParams) {
  McpServer server(Options());
  const json::object r = Ask(
      server,
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}})");
  EXPECT_EQ(ErrorCode(r), -32602);
  EXPECT_EQ(r.at("id"), 9);
  EXPECT_NE(r.at("error").at("message").as_string().find("Unknown tool: add"), std::string::npos);
  EXPECT_TRUE(seen_arguments_.empty());
}

TEST_F(McpServerTest, NotificationsAndClientResponsesGetNoResponse) {
  McpServer server(Options());
  for (
      const char* line : {
          R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
          R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"x"}})",
          R"({"jsonrpc":"2.0","method":"no/such/notification"})",
          R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_code","arguments":{"code":"1"}}})",
          R"({"jsonrpc":"2.0","id":5,"result":{}})",
          R"({"jsonrpc":"2.0","id":6,"error":{"code":-1,"message":"no"}})",
          "",
          "   \r",
      }) {
    EXPECT_FALSE(server.HandleLine(line).has_value()) << line;
  }
  EXPECT_TRUE(seen_arguments_.empty()) << "a notification must not run code";
}

TEST_F(McpServerTest, EachErrorCode) {
  McpServer server(Options());
  struct Case {
    const char* line;
    std::int64_t code;
    json::value id;
  };
  const Case cases[] = {
      {"{", -32700, nullptr},
      {"not json at all", -32700, nullptr},
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing", -32700, nullptr},
      {"\"jsonrpc\"", -32600, nullptr},
      {"42", -32600, nullptr},
      {"null", -32600, nullptr},
      {R"({"id":1,"method":"ping"})", -32600, 1},
      {R"({"jsonrpc":"1.0","id":1,"method":"ping"})", -32600, 1},
      {R"({"jsonrpc":2,"id":1,"method":"ping"})", -32600, 1},
      {R"({"jsonrpc":"2.0","id":true,"method":"ping"})", -32600, nullptr},
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", -32600, nullptr},
      {R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", -32600, nullptr},
      {R"({"jsonrpc":"2.0","id":1e999,"method":"ping"})", -32600, nullptr},
      {R"({"jsonrpc":"2.0","id":1,"method":5})", -32600, 1},
      {R"({"jsonrpc":"2.0","id":1})", -32600, 1},
      {R"({"jsonrpc":"2.0","id":1,"method":"ping","params":"x"})", -32600, 1},
      {R"({"jsonrpc":"2.0","method":7})", -32600, nullptr},
      {R"({"jsonrpc":"2.0","id":1,"method":"completion/complete"})", -32601, 1},
      {R"({"jsonrpc":"2.0","id":"m","method":"no/such/method","params":{}})", -32601, "m"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})", -32602, 1},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":3}})", -32602, 1},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]})", -32602, 1},
  };
  for (const Case& c : cases) {
    const json::object r = Ask(server, c.line);
    EXPECT_EQ(ErrorCode(r), c.code) << c.line;
    EXPECT_EQ(r.at("id"), c.id) << c.line;
    EXPECT_TRUE(r.at("error").at("message").is_string()) << c.line;
  }
}

TEST_F(McpServerTest, BatchArraysAreRefused) {
  McpServer server(Options());
  for (const char* line : {"[]", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"}) {
    const json::object r = Ask(server, line);
    EXPECT_EQ(ErrorCode(r), -32600) << line;
    EXPECT_EQ(r.at("id"), nullptr);
    EXPECT_NE(r.at("error").at("message").as_string().find("batch"), std::string::npos);
  }
}

TEST_F(McpServerTest, OversizedLineIsRefusedByHandleLine) {
  McpServerOptions o = Options();
  o.max_line_bytes = 1000;
  McpServer server(std::move(o));
  const json::object r = Ask(server, CallLine(1, json::object{{"code", std::string(2000, 'x')}}));
  EXPECT_EQ(ErrorCode(r), -32600);
  EXPECT_NE(r.at("error").at("message").as_string().find("1000 bytes"), std::string::npos);
  EXPECT_TRUE(seen_arguments_.empty());
}

// Serve() with a string stream: collects the response lines.
std::vector<json::object> ServeAll(McpServer& server, const std::string& input) {
  std::istringstream in(input);
  std::mutex mu;
  std::vector<std::string> lines;
  server.Serve(in, [&](std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  });
  std::vector<json::object> out;
  for (const auto& line : lines) {
    EXPECT_EQ(line.find('\n'), std::string::npos);
    json::error_code ec;
    json::value v = json::parse(line, ec);
    EXPECT_FALSE(ec) << line;
    if (!ec && v.is_object()) out.push_back(v.as_object());
  }
  return out;
}

TEST_F(McpServerTest, ServeDiscardsAnOversizedLineAndKeepsGoing) {
  McpServerOptions o = Options();
  o.max_line_bytes = 100 * 1024;  // larger than the reader's 64 KiB chunk, so both paths run
  McpServer server(std::move(o));
  const std::string big_ok = CallLine(2, json::object{{"code", std::string(90 * 1024, 'a')}});
  ASSERT_LT(big_ok.size(), 100u * 1024);
  const std::string input = std::string(300 * 1024, '{') + "\n" +  // oversized garbage
                            R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
                            "\n" +  //
                            big_ok +
                            "\n" +  // 90 KiB: fine
                            CallLine(3, json::object{{"code", std::string(200 * 1024, 'b')}}) +
                            "\n" +
                            R"({"jsonrpc":"2.0","id":4,"method":"ping"})";  // no final newline
  const auto responses = ServeAll(server, input);
  ASSERT_EQ(responses.size(), 5u);
  std::vector<std::int64_t> codes;
  for (const auto& r : responses) {
    if (r.contains("error")) {
      EXPECT_EQ(r.at("error").at("code"), -32600);
      EXPECT_EQ(r.at("id"), nullptr);
    }
  }
  // The two pings and the 90 KiB call are answered; the call ran with its whole code.
  std::set<std::int64_t> ids;
  for (const auto& r : responses) {
    if (!r.at("id").is_null()) ids.insert(r.at("id").as_int64());
  }
  EXPECT_EQ(ids, (std::set<std::int64_t>{1, 2, 4}));
  ASSERT_EQ(seen_arguments_.size(), 1u);
  EXPECT_EQ(json::parse(seen_arguments_[0]).at("code").as_string().size(), 90u * 1024);
}

TEST_F(McpServerTest, AThousandGarbageLinesDoNotCrash) {
  McpServer server(Options());
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::vector<std::string> shapes = {
      R"({"jsonrpc":"2.0","id":{},"method":"ping"})",
      "null",
      "[1,2",
      "{\"a\":",
      "\xff\xfe\xfd",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":[]}})",
      "{\"jsonrpc\":\"2.0\",\"id\":1e999}",
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":{}}})",
      std::string(5000, '['),
      "\"\\ud800\"",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"\x01}"};
  std::string input;
  for (int i = 0; i < 1000; ++i) {
    std::string line;
    if (i % 3 == 0) {
      line = shapes[static_cast<std::size_t>(i / 3) % shapes.size()];
    } else {
      const int n = 1 + byte(rng) * 4;
      for (int k = 0; k < n; ++k) {
        char c = static_cast<char>(byte(rng));
        line.push_back(c == '\n' ? ' ' : c);
      }
    }
    input += line + "\n";
  }
  input += R"({"jsonrpc":"2.0","id":"last","method":"ping"})"
           "\n";
  const auto responses = ServeAll(server, input);
  ASSERT_FALSE(responses.empty());
  EXPECT_GT(responses.size(), 900u);
  EXPECT_LE(responses.size(), 1001u);
  const std::set<std::int64_t> allowed = {-32700, -32600, -32601, -32602};
  int last_seen = 0;
  for (const auto& r : responses) {
    if (r.contains("error")) {
      EXPECT_TRUE(allowed.count(r.at("error").at("code").as_int64())) << json::serialize(r);
    } else if (r.at("id") == "last") {
      ++last_seen;
    }
  }
  EXPECT_EQ(last_seen, 1);
  EXPECT_TRUE(seen_arguments_.empty());
}

TEST_F(McpServerTest, ConcurrentCallsRunAtOnceAndKeepTheirIds) {
  McpServerOptions o = Options();
  o.max_concurrent_calls = 4;
  McpServer server(std::move(o));
  script_->barrier_size = 4;
  std::string input = InitializeLine("2025-06-18") + "\n" +
                      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                      "\n";
  constexpr int kCalls = 12;
  for (int i = 1; i <= kCalls; ++i) {
    const json::value id = i % 2 ? json::value(i) : json::value("id-" + std::to_string(i));
    input += CallLine(id, json::object{{"code", "barrier:" + std::to_string(i)}}) + "\n";
  }
  const auto responses = ServeAll(server, input);  // returns only after every call answered
  ASSERT_EQ(responses.size(), static_cast<std::size_t>(kCalls + 1));
  std::set<std::string> answered;
  for (const auto& r : responses) {
    if (r.at("id") == 0) continue;  // initialize
    ASSERT_TRUE(r.contains("result")) << json::serialize(r);
    const std::string printed(r.at("result").at("structuredContent").at("stdout").as_string());
    const std::string n = printed.substr(0, printed.size() - 1);
    const json::value expected_id =
        std::stoi(n) % 2 ? json::value(std::stoi(n)) : json::value("id-" + n);
    EXPECT_EQ(r.at("id"), expected_id) << "response carries another call's id";
    EXPECT_EQ(r.at("result").at("isError"), false);
    answered.insert(n);
  }
  EXPECT_EQ(answered.size(), static_cast<std::size_t>(kCalls));
  EXPECT_TRUE(script_->reached_barrier) << "calls did not run concurrently";
  EXPECT_EQ(script_->max_in_flight, 4) << "more calls ran at once than max_concurrent_calls";
}

TEST_F(McpServerTest, ExecuteThatThrowsIsAnInternalError) {
  McpServerOptions o = Options();
  o.execute = [](const std::string&, const CancellationToken&,
                 const OutputCallback&) -> ExecutionResult { throw std::runtime_error("boom"); };
  McpServer server(std::move(o));
  const json::object r = Ask(server, CallLine(1, json::object{{"code", "1"}}));
  EXPECT_EQ(ErrorCode(r), -32603);
  EXPECT_EQ(r.at("id"), 1);
}

// ---- ids, batches, nesting ----

TEST_F(McpServerTest, IdsComeBackByteForByte) {
  McpServer server(Options());
  for (const std::string id : {"18446744073709551616", "123456789012345678901234567890",
                               "-9223372036854775809", "1.5", "-0", R"("caf\u00e9")", "7"}) {
    const auto response =
        server.HandleLine(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"ping"})");
    ASSERT_TRUE(response.has_value()) << id;
    EXPECT_EQ(*response, R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{}})");
  }
  const auto call = server.HandleLine(CallLine(json::value(nullptr), json::object{{"code", "1"}})
                                          .replace(22, 4, "18446744073709551616"));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->rfind(R"({"jsonrpc":"2.0","id":18446744073709551616,"result":)", 0), 0u) << *call;
  // An error about the request echoes the id as sent, too.
  EXPECT_EQ(
      *server.HandleLine(R"({"jsonrpc":"2.0","id":99999999999999999999,"method":"nope"})"),
      R"({"jsonrpc":"2.0","id":99999999999999999999,"error":{"code":-32601,"message":"Method not found: nope"}})");
}

TEST_F(McpServerTest, BatchesExistOnlyUnder20250326) {
  McpServer server(Options());
  const std::string batch = R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])";
  Ask(server, InitializeLine("2025-06-18"));
  const json::object refused = Ask(server, batch);
  EXPECT_EQ(ErrorCode(refused), -32600);
  EXPECT_NE(refused.at("error").at("message").as_string().find("not in the negotiated 2025-06-18"),
            std::string::npos);
  Ask(server, InitializeLine("2025-03-26"));
  EXPECT_EQ(*server.HandleLine(batch), R"([{"jsonrpc":"2.0","id":1,"result":{}}])");
}

TEST_F(McpServerTest, ABatchIsAnsweredWithOneArrayInItsOrder) {
  McpServer server(Options());
  const std::string input =
      InitializeLine("2025-03-26") + "\n" +
      R"([{"jsonrpc":"2.0","id":"p","method":"ping"},)"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"},)" +
      CallLine(18, json::object{{"code", "sleep:50"}}).replace(22, 2, "18446744073709551616") +
      "," + R"(5,)" + InitializeLine("2025-03-26") + "," +
      CallLine(2, json::object{{"code", "x"}}) + "]\n" +
      R"([{"jsonrpc":"2.0","method":"notifications/initialized"}])"
      "\n";  // only notifications: no answer
  std::istringstream in(input);
  std::vector<std::string> lines;
  std::mutex mu;
  server.Serve(in, [&](std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  });
  ASSERT_EQ(lines.size(), 2u);  // initialize, and the one batch answer
  const std::string& answer = lines[1];
  EXPECT_NE(answer.find(R"("id":18446744073709551616,"result")"), std::string::npos) << answer;
  const json::value v = json::parse(answer);
  ASSERT_TRUE(v.is_array()) << answer;
  const json::array& a = v.as_array();
  ASSERT_EQ(a.size(), 5u) << answer;
  EXPECT_EQ(a[0].at("id"), "p");
  EXPECT_EQ(a[1].at("result").at("structuredContent").at("stdout"), "slept\n");
  EXPECT_EQ(a[2].at("error").at("code"), -32600);  // 5 is no message
  EXPECT_EQ(a[3].at("error").at("code"), -32600);  // initialize must not be in a batch
  EXPECT_NE(a[3].at("error").at("message").as_string().find("initialize"), std::string::npos);
  EXPECT_EQ(a[4].at("id"), 2);
  EXPECT_EQ(a[4].at("result").at("isError"), false);
  EXPECT_EQ(
      *server.HandleLine("[]"),
      R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an empty batch"}})");
}

TEST_F(McpServerTest, DeepArgumentsRunAndTooDeepOnesAreNamed) {
  McpServer server(Options());
  std::string nested = "1";
  for (int i = 0; i < 40; ++i) nested = "[" + nested + "]";
  const json::object ran = Ask(
      server, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code",)"
              R"x("arguments":{"code":"print(1)","extra":)x" +
                  nested + "}}}");
  EXPECT_EQ(ran.at("result").at("isError"), false) << json::serialize(ran);
  for (int i = 0; i < 160; ++i) nested = "[" + nested + "]";
  const json::object refused = Ask(
      server, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code",)"
              R"x("arguments":{"code":"print(1)","extra":)x" +
                  nested + "}}}");
  EXPECT_EQ(ErrorCode(refused), -32700);
  EXPECT_EQ(refused.at("error").at("message"),
            "Parse error: the message is nested deeper than 128 levels");
  // The provider's own reading of the arguments says the same (an SDK may call it directly).
  const ExecutionResult direct =
      ExecuteCodeFunction(provider_).InvokeResult(R"({"code":"1","x":)" + nested + "}");
  EXPECT_EQ(direct.outcome, Outcome::kValidationFailed);
  EXPECT_EQ(direct.message, "arguments are too deeply nested: nested deeper than 128 levels");
}

}  // namespace
}  // namespace codeact
