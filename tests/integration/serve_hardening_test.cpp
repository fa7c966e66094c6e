// `codeact serve` against the attacks of issue 33's service round, each as a black box over
// real HTTP: Host names that only start like a loopback name, framing the RFC requires to be
// refused, quotas that must hold on every route that runs code, and the session caps per caller.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/serve_support.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using testing::Bearer;
using testing::HttpCall;
using testing::HttpResponse;
using testing::RawExchange;
using testing::RawReply;
using testing::ServeProcess;

const std::string kTokenA = "token-aaaa-0123456789";
const std::string kTokenB = "token-bbbb-9876543210";

class ServeHardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("serve-hardening-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tmp");
    fs::create_directories(dir_ / "out");
    std::ofstream(dir_ / "tokens") << kTokenA << "\n" << kTokenB << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An anonymous loopback server (no credentials) unless `tokens`.
  std::unique_ptr<ServeProcess> Serve(std::vector<std::string> more, bool tokens = false) {
    std::vector<std::string> args = {"--isolation", "process", "--no-validate", "--mount",
                                     (dir_ / "out").string() + ":/out:rw"};
    if (tokens) {
      args.push_back("--token-file");
      args.push_back((dir_ / "tokens").string());
    }
    args.insert(args.end(), more.begin(), more.end());
    auto server = std::make_unique<ServeProcess>(args, (dir_ / "tmp").string());
    EXPECT_NE(server->port(), 0) << server->Stderr();
    return server;
  }

  bool WaitStarted() {
    return testing::Eventually([&] { return fs::exists(dir_ / "out" / "started"); },
                               std::chrono::seconds(60));
  }
  // Code that writes its pid to `<mount>/started` once it runs, then sleeps.
  std::string StartThenSleep(int seconds) const {
    return "import os, time\n"
           "d = '/out' if os.path.isdir('/out') else " +
           bj::serialize(bj::value((dir_ / "out").string())) +
           "\n"
           "open(d + '/started.tmp', 'w').write(str(os.getpid()))\n"
           "os.rename(d + '/started.tmp', d + '/started')\n"
           "time.sleep(" +
           std::to_string(seconds) + ")\nprint('slept')\n";
  }
  pid_t StartedPid() const {
    std::ifstream in(dir_ / "out" / "started");
    pid_t pid = 0;
    in >> pid;
    return pid;
  }

  fs::path dir_;
};

std::string Execute(const std::string& code) { return bj::serialize(bj::object{{"code", code}}); }

// ---- MCP over HTTP ---------------------------------------------------------------------------

HttpResponse McpPost(std::uint16_t port, const std::string& token, const std::string& body,
                     const std::string& session = "") {
  testing::Headers headers = {{"Accept", "application/json, text/event-stream"}};
  if (!session.empty()) headers.emplace_back("Mcp-Session-Id", session);
  return HttpCall(port, "POST", "/mcp", body, token.empty() ? headers : Bearer(token, headers));
}

std::string InitializeBody(const std::string& version = "2025-06-18") {
  return bj::serialize(bj::object{
      {"jsonrpc", "2.0"},
      {"id", 1},
      {"method", "initialize"},
      {"params", bj::object{{"protocolVersion", version},
                            {"capabilities", bj::object{}},
                            {"clientInfo", bj::object{{"name", "test"}, {"version", "1"}}}}}});
}

// The Mcp-Session-Id of a new MCP session, or "" (with the response in `*out`).
std::string Initialize(std::uint16_t port, const std::string& token,
                       const std::string& version = "2025-06-18", HttpResponse* out = nullptr) {
  HttpResponse r = McpPost(port, token, InitializeBody(version));
  if (out != nullptr) *out = r;
  return r.status == 200 ? r.Header("mcp-session-id") : "";
}

bj::object ToolsCall(int id, const std::string& code, const std::string& session = "") {
  bj::object arguments{{"code", code}};
  if (!session.empty()) arguments["session"] = session;
  return bj::object{{"jsonrpc", "2.0"},
                    {"id", id},
                    {"method", "tools/call"},
                    {"params", bj::object{{"name", "execute_code"}, {"arguments", arguments}}}};
}

// A tools/call response's ExecutionResult.
bj::value CallResult(const bj::value& response) {
  return response.at("result").at("structuredContent");
}

// ---- Host ------------------------------------------------------------------------------------

TEST_F(ServeHardeningTest, ALoopbackServerRefusesAHostThatOnlyStartsWith127) {
  auto server = Serve({});
  ASSERT_NE(server->port(), 0);
  const std::string port = std::to_string(server->port());
  for (const char* route : {"/v1/tools", "/metrics", "/v1/sessions", "/healthz"}) {
    for (const std::string& host :
         std::vector<std::string>{"127.0.0.1.attacker.example",
                                  "127.0.0.1.attacker.example:" + port, "127.attacker.example"}) {
      const HttpResponse r = HttpCall(server->port(), "GET", route, "", {{"Host", host}});
      EXPECT_EQ(r.status, 403) << route << " Host: " << host << " " << r.body;
      EXPECT_NE(r.body.find("\"forbidden_host\""), std::string::npos) << r.body;
      EXPECT_EQ(r.body.find("\"sessions\""), std::string::npos) << "session ids leaked";
    }
  }
  for (const std::string& host :
       std::vector<std::string>{"127.0.0.1:" + port, "127.3.4.5", "localhost:" + port, "[::1]"}) {
    EXPECT_EQ(HttpCall(server->port(), "GET", "/v1/tools", "", {{"Host", host}}).status, 200)
        << host;
  }
  const HttpResponse bad = HttpCall(server->port(), "GET", "/v1/tools", "", {{"Host", "a b"}});
  EXPECT_EQ(bad.status, 400) << bad.body;
}

// ---- Framing ---------------------------------------------------------------------------------

std::string Chunked(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return std::string(size) + "\r\n" + data + "\r\n0\r\n\r\n";
}

// A chunked body that would be a second request if the first were framed without it.
const std::string kSmuggled = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

TEST_F(ServeHardeningTest, ATransferEncodingNotEndingInChunkedIs400AndCloses) {
  auto server = Serve({});
  ASSERT_NE(server->port(), 0);
  const std::string head =
      "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\n";
  for (const std::string te : {"chunked, identity", "identity", "gzip", "chunked, chunked"}) {
    const RawReply r = RawExchange(
        server->port(), head + "Transfer-Encoding: " + te + "\r\n\r\n" + Chunked(kSmuggled));
    EXPECT_EQ(r.Statuses(), std::vector<int>{400}) << te << ":\n" << r.text;
    EXPECT_TRUE(r.closed) << te << ": the connection stayed open";
    EXPECT_NE(r.text.find("\"bad_framing\""), std::string::npos) << r.text;
    EXPECT_EQ(r.text.find("codeact_"), std::string::npos) << "the body was served as a request";
  }
  // A coding before chunked is not implemented: 501, and closed as well.
  const RawReply gzip = RawExchange(
      server->port(), head + "Transfer-Encoding: gzip, chunked\r\n\r\n" + Chunked(kSmuggled));
  EXPECT_EQ(gzip.Statuses(), std::vector<int>{501}) << gzip.text;
  EXPECT_TRUE(gzip.closed);
  // Transfer-Encoding with Content-Length, in either order and whatever the coding.
  const std::string body = Execute("1");
  for (const std::string fields :
       {"Transfer-Encoding: xchunked\r\nContent-Length: " + std::to_string(body.size()),
        "Content-Length: " + std::to_string(body.size()) + "\r\nTransfer-Encoding: xchunked",
        "Transfer-Encoding: chunked\r\nContent-Length: " + std::to_string(body.size())}) {
    const RawReply r = RawExchange(server->port(), head + fields + "\r\n\r\n" + body);
    EXPECT_EQ(r.Statuses(), std::vector<int>{400}) << fields << ":\n" << r.text;
    EXPECT_TRUE(r.closed) << fields;
  }
  // HTTP/1.0 has no Transfer-Encoding.
  const RawReply old = RawExchange(server->port(),
                                   "POST /v1/execute HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: "
                                   "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                       Chunked(body));
  EXPECT_EQ(old.Statuses(), std::vector<int>{400}) << old.text;
  // Plain chunked is served.
  const RawReply good =
      RawExchange(server->port(),
                  head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + Chunked(body));
  EXPECT_EQ(good.Statuses(), std::vector<int>{200}) << good.text;
}

TEST_F(ServeHardeningTest, DuplicateHostAndContentLengthAre400) {
  auto server = Serve({});
  ASSERT_NE(server->port(), 0);
  const RawReply hosts = RawExchange(
      server->port(), "GET /v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n");
  EXPECT_EQ(hosts.Statuses(), std::vector<int>{400}) << hosts.text;
  EXPECT_TRUE(hosts.closed);
  const std::string body = Execute("1");
  const std::string n = std::to_string(body.size());
  for (const std::string lengths :
       {"Content-Length: " + n + "\r\nContent-Length: " + n, "Content-Length: " + n + ", " + n,
        "Content-Length: " + n + "\r\nContent-Length: 1"}) {
    const RawReply r = RawExchange(server->port(),
                                   "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                   "application/json\r\n" +
                                       lengths + "\r\n\r\n" + body);
    EXPECT_EQ(r.Statuses(), std::vector<int>{400}) << lengths << ":\n" << r.text;
    EXPECT_TRUE(r.closed) << lengths;
  }
  // Whitespace between a field name and its colon (RFC 9112 5.1).
  const RawReply space =
      RawExchange(server->port(), "GET /v1/tools HTTP/1.1\r\nHost : 127.0.0.1\r\n\r\n");
  EXPECT_EQ(space.Statuses(), std::vector<int>{400}) << space.text;
}

// A chunked body's trailer must not reach the application as a header: here it would supply
// the credentials the header lacked.
TEST_F(ServeHardeningTest, TrailerFieldsAreNotMergedIntoTheHeader) {
  auto server = Serve({}, /*tokens=*/true);
  ASSERT_NE(server->port(), 0);
  const std::string body = Execute("print('ran')");
  char size[32];
  std::snprintf(size, sizeof size, "%zx", body.size());
  const RawReply r =
      RawExchange(server->port(),
                  "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                  "application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                      std::string(size) + "\r\n" + body + "\r\n0\r\nAuthorization: Bearer " +
                      kTokenA + "\r\n\r\n");
  EXPECT_EQ(r.Statuses(), std::vector<int>{401}) << r.text;
  EXPECT_EQ(r.text.find("ran"), std::string::npos) << r.text;
}

// ---- Hang-up ---------------------------------------------------------------------------------

TEST_F(ServeHardeningTest, AClientThatSendsAByteAndHangsUpCancelsItsRun) {
  auto server = Serve({});
  ASSERT_NE(server->port(), 0);
  {
    namespace net = boost::asio;
    net::io_context ioc;
    net::ip::tcp::socket socket(ioc);
    socket.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), server->port()));
    const std::string body = Execute(StartThenSleep(120));
    net::write(socket, net::buffer("POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: application/json\r\nContent-Length: " +
                                   std::to_string(body.size()) + "\r\n\r\n" + body));
    ASSERT_TRUE(WaitStarted()) << server->Stderr();
    net::write(socket, net::buffer(std::string("G")));  // the start of a pipelined request
  }                                                     // then the socket closes, mid-run
  const pid_t child = StartedPid();
  EXPECT_TRUE(testing::WaitAllDead({child}, std::chrono::seconds(30)).empty())
      << "the run went on after its client left";
  EXPECT_TRUE(testing::Eventually(
      [&] { return server->Stderr().find("\"status\":499") != std::string::npos; },
      std::chrono::seconds(30)))
      << server->Stderr();
  EXPECT_NE(server->Stderr().find("\"outcome\":\"cancelled\""), std::string::npos)
      << server->Stderr();
}

// A pipelined request that arrives while a run works is still answered after it.
TEST_F(ServeHardeningTest, APipelinedRequestIsAnsweredAfterTheRun) {
  auto server = Serve({});
  ASSERT_NE(server->port(), 0);
  const std::string body = Execute("print(6 * 7)");
  const std::string one =
      "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  const RawReply r =
      RawExchange(server->port(),
                  one + "GET /v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.Statuses(), (std::vector<int>{200, 200})) << r.text;
  EXPECT_NE(r.text.find("42\\n"), std::string::npos) << r.text;
}

// ---- Quotas on every route that runs code --------------------------------------------------

TEST_F(ServeHardeningTest, McpToolsCallTakesTheCallersRunSlot) {
  auto server = Serve({"--token-max-concurrent", "1"}, /*tokens=*/true);
  ASSERT_NE(server->port(), 0);
  const std::string session = Initialize(server->port(), kTokenA);
  ASSERT_FALSE(session.empty()) << server->Stderr();
  HttpResponse first;
  std::thread client([&] {
    first =
        McpPost(server->port(), kTokenA, bj::serialize(ToolsCall(2, StartThenSleep(3))), session);
  });
  ASSERT_TRUE(WaitStarted()) << server->Stderr();
  const HttpResponse second =
      McpPost(server->port(), kTokenA, bj::serialize(ToolsCall(3, "print(1)")), session);
  EXPECT_EQ(second.status, 429) << second.body;
  EXPECT_NE(second.body.find("\"token_concurrency\""), std::string::npos) << second.body;
  EXPECT_FALSE(second.Header("retry-after").empty());
  // The same slot over REST, and another caller's own.
  EXPECT_EQ(HttpCall(server->port(), "POST", "/v1/execute", Execute("1"), Bearer(kTokenA)).status,
            429);
  const std::string other = Initialize(server->port(), kTokenB);
  const HttpResponse b =
      McpPost(server->port(), kTokenB, bj::serialize(ToolsCall(4, "print(1)")), other);
  EXPECT_EQ(b.status, 200) << b.body;
  client.join();
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(CallResult(first.Json()).at("stdout"), "slept\n");
}

TEST_F(ServeHardeningTest, ABatchCountsEachRunAgainstTheRate) {
  auto server = Serve({"--token-rate", "0.001", "--token-burst", "5"}, /*tokens=*/true);
  ASSERT_NE(server->port(), 0);
  const std::string session = Initialize(server->port(), kTokenA, "2025-03-26");  // 1 of 5
  ASSERT_FALSE(session.empty()) << server->Stderr();
  auto batch = [&](int n) {
    bj::array calls;
    for (int i = 0; i < n; ++i)
      calls.push_back(ToolsCall(10 + i, "print(" + std::to_string(i) + ")"));
    return McpPost(server->port(), kTokenA, bj::serialize(calls), session);
  };
  const HttpResponse twelve = batch(12);
  EXPECT_EQ(twelve.status, 429) << twelve.body;
  EXPECT_NE(twelve.body.find("over this caller's burst of 5 runs"), std::string::npos)
      << twelve.body;
  const HttpResponse three = batch(3);  // 1 + 3 of 5
  ASSERT_EQ(three.status, 200) << three.body;
  EXPECT_EQ(three.Json().as_array().size(), 3u);
  const HttpResponse two = batch(2);  // 2 more than the 1 left
  EXPECT_EQ(two.status, 429) << two.body;
  EXPECT_NE(two.body.find("\"token_rate\""), std::string::npos) << two.body;
  EXPECT_FALSE(two.Header("retry-after").empty());
  const HttpResponse metrics = HttpCall(server->port(), "GET", "/metrics", "", Bearer(kTokenB));
  EXPECT_NE(metrics.body.find("codeact_executions_total{outcome=\"ok\"} 3\n"), std::string::npos)
      << metrics.body;
}

TEST_F(ServeHardeningTest, AnAnonymousServerLimitsItsOneCallersRuns) {
  auto server = Serve({});
  ASSERT_NE(server->port(), 0);
  const std::string session = Initialize(server->port(), "", "2025-03-26");
  ASSERT_FALSE(session.empty()) << server->Stderr();
  bj::array calls;
  for (int i = 0; i < 60; ++i) calls.push_back(ToolsCall(10 + i, "1"));
  const HttpResponse r = McpPost(server->port(), "", bj::serialize(calls), session);
  EXPECT_EQ(r.status, 429) << r.body.substr(0, 300);
  EXPECT_NE(r.body.find("over this caller's burst of 50 runs"), std::string::npos)
      << r.body.substr(0, 300);
  // Within the rate, anonymous runs are served.
  EXPECT_EQ(HttpCall(server->port(), "POST", "/v1/execute", Execute("1")).status, 200);
}

// --token-rate on an anonymous server is the one caller's rate, not replaced by the default 50/s
// (Args::Has saw only switches, so a flag with a value was never "given").
TEST_F(ServeHardeningTest, AnAnonymousServersTokenRateIsTheOneItWasGiven) {
  auto server = Serve({"--token-rate", "1", "--token-burst", "2"});
  ASSERT_NE(server->port(), 0);
  const std::string session = Initialize(server->port(), "", "2025-03-26");
  ASSERT_FALSE(session.empty()) << server->Stderr();
  bj::array calls;
  for (int i = 0; i < 3; ++i) calls.push_back(ToolsCall(10 + i, "1"));
  const HttpResponse r = McpPost(server->port(), "", bj::serialize(calls), session);
  EXPECT_EQ(r.status, 429) << r.body.substr(0, 300);
  EXPECT_NE(r.body.find("over this caller's burst of 2 runs"), std::string::npos)
      << r.body.substr(0, 300);
}

// ---- Sessions per caller ---------------------------------------------------------------------

TEST_F(ServeHardeningTest, OneCallersInitializesLeaveOthersRoomInTheMcpTable) {
  auto server = Serve({}, /*tokens=*/true);
  ASSERT_NE(server->port(), 0);
  const std::string b_first = Initialize(server->port(), kTokenB);
  ASSERT_FALSE(b_first.empty());
  int created = 0;
  HttpResponse refused;
  for (int i = 0; i < 1024; ++i) {
    HttpResponse r;
    if (!Initialize(server->port(), kTokenA, "2025-06-18", &r).empty()) {
      ++created;
    } else {
      refused = r;
      if (r.status != 429) break;
    }
  }
  EXPECT_EQ(created, 256) << "a quarter of the 1024-session table";
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_NE(refused.body.find("\"mcp_sessions_per_caller\""), std::string::npos) << refused.body;
  EXPECT_FALSE(refused.Header("retry-after").empty());
  // The other caller's session is still there, and it can open more.
  const HttpResponse list = McpPost(
      server->port(), kTokenB,
      bj::serialize(bj::object{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}), b_first);
  EXPECT_EQ(list.status, 200) << list.body;
  EXPECT_FALSE(Initialize(server->port(), kTokenB).empty());
}

TEST_F(ServeHardeningTest, AnIdleMcpSessionExpiresAndFreesItsPlace) {
  auto server =
      Serve({"--mcp-sessions-per-caller", "1", "--mcp-session-idle", "3"}, /*tokens=*/true);
  ASSERT_NE(server->port(), 0);
  const std::string first = Initialize(server->port(), kTokenA);
  ASSERT_FALSE(first.empty());
  HttpResponse over;
  EXPECT_TRUE(Initialize(server->port(), kTokenA, "2025-06-18", &over).empty());
  EXPECT_EQ(over.status, 429) << over.body;
  const std::string wait = over.Header("retry-after");
  EXPECT_TRUE(wait == "1" || wait == "2" || wait == "3") << "until the first one expires: " << wait;
  std::string second;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        second = Initialize(server->port(), kTokenA);
        return !second.empty();
      },
      std::chrono::seconds(30)));
  const HttpResponse gone = McpPost(
      server->port(), kTokenA,
      bj::serialize(bj::object{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}), first);
  EXPECT_EQ(gone.status, 404) << gone.body;
}

TEST_F(ServeHardeningTest, OneCallersSessionsLeaveOthersRoom) {
  auto server = Serve({"--max-sessions", "8"}, /*tokens=*/true);  // 2 per caller
  ASSERT_NE(server->port(), 0);
  const HttpResponse probe =
      HttpCall(server->port(), "POST", "/v1/sessions", "{}", Bearer(kTokenA));
  if (probe.status != 201) GTEST_SKIP() << "sessions are not available here: " << probe.body;
  EXPECT_EQ(HttpCall(server->port(), "POST", "/v1/sessions", "{}", Bearer(kTokenA)).status, 201);
  const HttpResponse third =
      HttpCall(server->port(), "POST", "/v1/sessions", "{}", Bearer(kTokenA));
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_NE(third.body.find("this caller has 2 sessions open, its limit"), std::string::npos)
      << third.body;
  EXPECT_FALSE(third.Header("retry-after").empty());
  // A's MCP named sessions count with its REST ones.
  const std::string a = Initialize(server->port(), kTokenA);
  const HttpResponse a_named =
      McpPost(server->port(), kTokenA, bj::serialize(ToolsCall(2, "x = 1", "mine")), a);
  ASSERT_EQ(a_named.status, 200) << a_named.body;
  EXPECT_EQ(CallResult(a_named.Json()).at("outcome"), "setup_error") << a_named.body;
  // B has room of its own: a REST session and a named MCP session.
  EXPECT_EQ(HttpCall(server->port(), "POST", "/v1/sessions", "{}", Bearer(kTokenB)).status, 201);
  const std::string b = Initialize(server->port(), kTokenB);
  const HttpResponse b_named =
      McpPost(server->port(), kTokenB, bj::serialize(ToolsCall(2, "x = 1", "mine")), b);
  ASSERT_EQ(b_named.status, 200) << b_named.body;
  EXPECT_EQ(CallResult(b_named.Json()).at("outcome"), "ok") << b_named.body;
}

}  // namespace
}  // namespace codeact
