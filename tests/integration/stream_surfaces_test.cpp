// Streamed output on the surfaces, as black boxes: `codeact mcp` (stdio) and `codeact serve`'s
// /mcp with a progressToken (notifications/progress per chunk, notifications/message once the
// client set a level), REST /v1/execute with Accept: text/event-stream, and a REST client that
// hangs up mid-stream. The program prints three lines 0.4 s apart: streamed, that is at least two
// chunks ahead of the result.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "process/helper_command.hpp"
#include "testing/fixtures.hpp"
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

const std::string kToken = "token-stream-0123456789abcdef";
const std::string kLines = "line 0\nline 1\nline 2\n";
// Progress notifications carry both streams; the program writes "done" to stderr after its lines.
const std::string kAllOutput = kLines + "done\n";

std::string Initialize(int id) {
  return bj::serialize(bj::object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"method", "initialize"},
      {"params", bj::object{{"protocolVersion", "2025-11-25"},
                            {"capabilities", bj::object{}},
                            {"clientInfo", bj::object{{"name", "it"}, {"version", "1"}}}}}});
}

std::string SetLevel(int id, const std::string& level) {
  return bj::serialize(bj::object{{"jsonrpc", "2.0"},
                                  {"id", id},
                                  {"method", "logging/setLevel"},
                                  {"params", bj::object{{"level", level}}}});
}

std::string StreamedCall(int id) {
  return bj::serialize(bj::object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"method", "tools/call"},
      {"params",
       bj::object{
           {"name", "execute_code"},
           {"arguments", bj::object{{"code", testing::Program("output_stream/three_lines_apart")}}},
           {"_meta", bj::object{{"progressToken", "out-1"}}}}}});
}

// What the notifications of the call said, in order: the chunks of its progress notifications
// (those that carry output, not the "still running" ones) and of its log messages by logger.
struct Heard {
  std::vector<std::string> progress_chunks;
  std::vector<double> progress_counts;
  std::string logged_stdout;
  std::string logged_stderr;
  std::optional<bj::object> result;  // the call's response
};

void Hear(const bj::value& message, Heard& heard) {
  const bj::object& m = message.as_object();
  if (const bj::value* method = m.if_contains("method")) {
    const bj::object& params = m.at("params").as_object();
    if (*method == "notifications/progress") {
      EXPECT_EQ(params.at("progressToken"), "out-1");
      heard.progress_counts.push_back(params.at("progress").to_number<double>());
      const std::string text(params.at("message").as_string());
      if (text.rfind("execute_code still running", 0) != 0) heard.progress_chunks.push_back(text);
    } else if (*method == "notifications/message") {
      const std::string logger(params.at("logger").as_string());
      if (logger == "stdout") {
        EXPECT_EQ(params.at("level"), "info");
        heard.logged_stdout += params.at("data").as_string();
      } else if (logger == "stderr") {
        EXPECT_EQ(params.at("level"), "warning");
        heard.logged_stderr += params.at("data").as_string();
      }
    }
  } else if (m.contains("result") && m.at("id") == 3) {
    heard.result = m.at("result").as_object();
  }
}

void ExpectStreamed(const Heard& heard, bool logged, const std::string& where) {
  ASSERT_TRUE(heard.result.has_value()) << where;
  EXPECT_EQ(heard.result->at("structuredContent").at("stdout").as_string(), kLines) << where;
  EXPECT_GE(heard.progress_chunks.size(), 2u) << where;
  std::string joined;
  for (const auto& chunk : heard.progress_chunks) joined += chunk;
  EXPECT_EQ(joined, kAllOutput) << where;
  for (std::size_t i = 1; i < heard.progress_counts.size(); ++i) {
    EXPECT_GT(heard.progress_counts[i], heard.progress_counts[i - 1]) << where;
  }
  EXPECT_EQ(heard.logged_stdout, logged ? kLines : "") << where;
}

// ---- stdio ---------------------------------------------------------------------------------

// What `codeact mcp` wrote to stdout, given `input` on stdin, a line each.
std::vector<std::string> McpStdioLines(const std::string& input) {
  auto r =
      internal::RunCommand({CODEACT_BINARY, "mcp"}, input, std::chrono::seconds(120), 64 << 20);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().ToString();
    return {};
  }
  std::vector<std::string> out;
  std::istringstream lines(r->stdout_text);
  for (std::string line; std::getline(lines, line);) out.push_back(line);
  return out;
}

TEST(StreamSurfacesTest, McpStdioSendsEachChunkAsProgressAndAsALogMessage) {
  const std::vector<std::string> lines =
      McpStdioLines(Initialize(1) + "\n" + SetLevel(2, "info") + "\n" + StreamedCall(3) + "\n");
  ASSERT_FALSE(lines.empty());
  Heard heard;
  bool level_answered = false;
  bool logging_declared = false;
  bool server_lines_heard = false;
  for (const std::string& line : lines) {
    const bj::value v = bj::parse(line);
    const bj::object& m = v.as_object();
    if (m.contains("id") && m.at("id") == 2) level_answered = m.at("result").as_object().empty();
    if (m.contains("id") && m.at("id") == 1) {
      logging_declared = m.at("result").at("capabilities").as_object().contains("logging");
    }
    // Nothing of the call comes after its response (the server's own log lines may).
    if (heard.result) {
      EXPECT_EQ(line.find("notifications/progress"), std::string::npos) << line;
      EXPECT_EQ(line.find("\"logger\":\"stdout\""), std::string::npos) << line;
    }
    Hear(v, heard);
    if (m.contains("method") && m.at("method") == "notifications/message" &&
        m.at("params").at("logger") == "codeact mcp") {
      server_lines_heard = true;
    }
  }
  EXPECT_TRUE(server_lines_heard) << "the server's own log lines at info reach the client";
  std::string stdout_text;
  for (const std::string& line : lines) stdout_text += line + "\n";
  EXPECT_TRUE(logging_declared) << stdout_text;
  EXPECT_TRUE(level_answered) << stdout_text;
  ExpectStreamed(heard, /*logged=*/true, "stdio");
}

TEST(StreamSurfacesTest, McpStdioWithoutALevelSendsNoLogMessages) {
  const std::vector<std::string> lines =
      McpStdioLines(Initialize(1) + "\n" + StreamedCall(3) + "\n");
  ASSERT_FALSE(lines.empty());
  Heard heard;
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find("notifications/message"), std::string::npos) << line;
    Hear(bj::parse(line), heard);
  }
  ExpectStreamed(heard, /*logged=*/false, "stdio without a level");
}

// ---- HTTP ----------------------------------------------------------------------------------

class StreamServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serve_ = new TokenServe("stream-serve", {kToken}, [](const fs::path&) {
      return std::vector<std::string>{"--isolation", "process", "--timeout", "60"};
    });
  }
  static void TearDownTestSuite() { delete serve_; }
  static ServeProcess& server() { return serve_->server(); }
  void SetUp() override { ASSERT_NE(server().port(), 0) << server().Stderr(); }

  static HttpResponse Post(const std::string& path, const std::string& body,
                           testing::Headers headers) {
    return HttpCall(server().port(), "POST", path, body, Bearer(kToken, std::move(headers)));
  }

  static TokenServe* serve_;
};
TokenServe* StreamServeTest::serve_ = nullptr;

// The events of an SSE body: (event name, data), the data lines of one event joined by "\n".
std::vector<std::pair<std::string, std::string>> SseEvents(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> events;
  std::istringstream lines(body);
  std::string line;
  std::string name = "message";
  std::optional<std::string> data;
  while (std::getline(lines, line)) {
    if (line.rfind("event: ", 0) == 0) {
      name = line.substr(7);
    } else if (line.rfind("data: ", 0) == 0) {
      data = data ? *data + "\n" + line.substr(6) : line.substr(6);
    } else if (line.empty() && data) {
      events.emplace_back(name, *data);
      name = "message";
      data.reset();
    }
  }
  return events;
}

TEST_F(StreamServeTest, McpOverHttpStreamsChunksAsProgressAndLogMessages) {
  const testing::Headers accept = {{"Accept", "application/json, text/event-stream"}};
  const HttpResponse init = Post("/mcp", Initialize(1), accept);
  ASSERT_EQ(init.status, 200) << init.body;
  EXPECT_TRUE(init.Json().at("result").at("capabilities").as_object().contains("logging"));
  const std::string session = init.Header("mcp-session-id");
  testing::Headers in_session = accept;
  in_session.emplace_back("Mcp-Session-Id", session);
  in_session.emplace_back("MCP-Protocol-Version", "2025-11-25");
  const HttpResponse level = Post("/mcp", SetLevel(2, "info"), in_session);
  ASSERT_EQ(level.status, 200) << level.body;
  const HttpResponse call = Post("/mcp", StreamedCall(3), in_session);
  ASSERT_EQ(call.status, 200) << call.body;
  EXPECT_EQ(call.Header("content-type"), "text/event-stream");
  Heard heard;
  for (const auto& [name, data] : SseEvents(call.body)) {
    EXPECT_EQ(name, "message");
    Hear(bj::parse(data), heard);
  }
  ExpectStreamed(heard, /*logged=*/true, "http");
}

TEST_F(StreamServeTest, RestExecuteWithAcceptEventStreamAnswersSse) {
  const std::string body =
      bj::serialize(bj::object{{"code", testing::Program("output_stream/three_lines_apart")}});
  const HttpResponse r = Post("/v1/execute", body, {{"Accept", "text/event-stream"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("content-type"), "text/event-stream");
  const auto events = SseEvents(r.body);
  ASSERT_GE(events.size(), 3u) << r.body;
  std::string streamed;
  std::string streamed_err;
  int chunks = 0;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    const std::string text(bj::parse(events[i].second).as_string());
    if (events[i].first == "stdout") {
      streamed += text;
      ++chunks;
    } else {
      EXPECT_EQ(events[i].first, "stderr") << r.body;
      streamed_err += text;
    }
  }
  EXPECT_GE(chunks, 2) << r.body;
  EXPECT_EQ(streamed, kLines);
  EXPECT_EQ(streamed_err, "done\n");
  EXPECT_EQ(events.back().first, "result");
  const bj::value result = bj::parse(events.back().second);
  EXPECT_EQ(result.at("outcome"), "ok");
  EXPECT_EQ(result.at("stdout").as_string(), kLines);
  // Without the Accept header: the result JSON, as ever.
  const HttpResponse plain = Post("/v1/execute", body, {});
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.Header("content-type"), "application/json");
  EXPECT_EQ(plain.Json().at("stdout").as_string(), kLines);
}

// A client that closes the stream once it saw the first chunk cancels the run (300 s of sleep
// otherwise): /metrics counts it as cancelled.
TEST_F(StreamServeTest, ClosingTheRestStreamCancelsTheRun) {
  const std::string body = bj::serialize(
      bj::object{{"code", "import time\nprint('started', flush=True)\ntime.sleep(50)"}});
  const std::string request =
      "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Authorization: Bearer " +
      kToken +
      "\r\nAccept: text/event-stream\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  namespace net = boost::asio;
  net::io_context ioc;
  net::ip::tcp::socket socket(ioc);
  socket.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), server().port()));
  net::write(socket, net::buffer(request));
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  char buf[4096];
  // print() writes "started" and its newline apart: they may come as two chunks.
  while (seen.find("data: \"started") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd p{socket.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(socket.native_handle(), buf, sizeof buf, 0);
    if (n <= 0) break;
    seen.append(buf, static_cast<std::size_t>(n));
  }
  ASSERT_NE(seen.find("data: \"started"), std::string::npos) << seen;
  socket.close();
  EXPECT_TRUE(testing::Eventually(
      [&] {
        const HttpResponse m = HttpCall(server().port(), "GET", "/metrics", "", Bearer(kToken));
        return m.body.find("codeact_executions_total{outcome=\"cancelled\"} 1") !=
               std::string::npos;
      },
      std::chrono::seconds(20)))
      << server().Stderr();
}

}  // namespace
}  // namespace codeact
