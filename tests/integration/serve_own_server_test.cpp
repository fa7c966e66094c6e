// `codeact serve` as a black box, one server per test with flags of its own: SIGTERM with a run in
// flight, a client that hangs up (its run is cancelled), queue and per-token limits (429), security
// lines and JWT cases. The fixture: serve_http_fixture.hpp.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "http_server/jwt.hpp"
#include "integration/serve_http_fixture.hpp"
#include "testing/cli_support.hpp"
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

using namespace serve_http_test;  // NOLINT(build/namespaces): the shared helpers

// Code that writes its pid to `<mount>/started` (the mount is at /out inside the sandbox, at its
// host path at the process level), then sleeps.
std::string StartThenSleep(const fs::path& dir, int seconds) {
  return "import os, time\n"
         "d = '/out' if os.path.isdir('/out') else " +
         bj::serialize(bj::value(dir.string())) +
         "\n"
         "open(d + '/started.tmp', 'w').write(str(os.getpid()))\n"
         "os.rename(d + '/started.tmp', d + '/started')\n"
         "time.sleep(" +
         std::to_string(seconds) + ")\nprint('slept')\n";
}

pid_t StartedPid(const fs::path& dir) {
  std::ifstream in(dir / "started");
  pid_t pid = 0;
  in >> pid;
  return pid;
}

TEST(ServeStartTest, AJwtAudienceWithoutItsSecretIsRefused) {
  const auto run = testing::RunCli({"serve", "--jwt-audience", "codeact"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--jwt-audience needs --jwt-secret-file"), std::string::npos) << run.err;
}

class ServeOwnServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("serve-own");
    WriteFile(dir_ / "tokens", kToken1 + "\n" + kToken2 + "\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> Args(std::vector<std::string> more) {
    std::vector<std::string> args = {"--token-file",
                                     (dir_ / "tokens").string(),
                                     "--isolation",
                                     "process",
                                     "--no-validate",
                                     "--mount",
                                     (dir_ / "out").string() + ":/out:rw"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  bool WaitStarted() {
    return testing::Eventually([&] { return fs::exists(dir_ / "out" / "started"); },
                               std::chrono::seconds(60));
  }
  fs::path dir_;
};

TEST_F(ServeOwnServerTest, SigtermDrainsARunInFlightAndExitsZero) {
  ServeProcess server(Args({"--shutdown-grace", "60"}), (dir_ / "tmp").string());
  ASSERT_NE(server.port(), 0) << server.Stderr();
  HttpResponse reply;
  std::jthread client([&] {
    reply = HttpCall(server.port(), "POST", "/v1/execute", Execute(StartThenSleep(dir_ / "out", 2)),
                     Bearer(kToken1));
  });
  ASSERT_TRUE(WaitStarted()) << server.Stderr();
  server.Signal(SIGTERM);
  client.join();
  ASSERT_EQ(reply.status, 200) << reply.error << server.Stderr();
  EXPECT_EQ(reply.Json().at("outcome"), "ok");
  EXPECT_EQ(reply.Json().at("stdout"), "slept\n");
  EXPECT_EQ(server.Wait(std::chrono::seconds(60)), 0) << server.Stderr();
  EXPECT_NE(HttpCall(server.port(), "GET", "/healthz").status, 200) << "still listening";
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp", ec)) << "scratch left behind";
}

TEST_F(ServeOwnServerTest, SigtermCancelsARunPastTheGrace) {
  ServeProcess server(Args({"--shutdown-grace", "1"}), (dir_ / "tmp").string());
  ASSERT_NE(server.port(), 0) << server.Stderr();
  HttpResponse reply;
  std::jthread client([&] {
    reply = HttpCall(server.port(), "POST", "/v1/execute",
                     Execute(StartThenSleep(dir_ / "out", 120)), Bearer(kToken1));
  });
  ASSERT_TRUE(WaitStarted()) << server.Stderr();
  const pid_t child = StartedPid(dir_ / "out");
  server.Signal(SIGTERM);
  client.join();
  ASSERT_EQ(reply.status, 200) << reply.error << server.Stderr();
  EXPECT_EQ(reply.Json().at("outcome"), "cancelled");
  EXPECT_EQ(server.Wait(std::chrono::seconds(60)), 0) << server.Stderr();
  EXPECT_TRUE(testing::WaitAllDead({child}).empty()) << "the run outlived the server";
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp", ec)) << "scratch left behind";
}

TEST_F(ServeOwnServerTest, AClientThatHangsUpCancelsItsRun) {
  ServeProcess server(Args({}), (dir_ / "tmp").string());
  ASSERT_NE(server.port(), 0) << server.Stderr();
  {
    namespace net = boost::asio;
    net::io_context ioc;
    net::ip::tcp::socket socket(ioc);
    socket.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), server.port()));
    const std::string body = Execute(StartThenSleep(dir_ / "out", 120));
    const std::string request =
        "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Authorization: Bearer " +
        kToken1 +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n" + body;
    net::write(socket, net::buffer(request));
    ASSERT_TRUE(WaitStarted()) << server.Stderr();
  }  // the socket closes here, mid-run
  const pid_t child = StartedPid(dir_ / "out");
  EXPECT_TRUE(testing::WaitAllDead({child}, std::chrono::seconds(30)).empty())
      << "the run went on after its client left";
  EXPECT_TRUE(testing::Eventually(
      [&] {
        const HttpResponse m = HttpCall(server.port(), "GET", "/metrics", "", Bearer(kToken1));
        return m.body.find("codeact_executions_total{outcome=\"cancelled\"} 1\n") !=
               std::string::npos;
      },
      std::chrono::seconds(30)))
      << server.Stderr();
  // The access line is written when the connection's handler finishes, which may be after the
  // metrics counted the run.
  EXPECT_TRUE(testing::Eventually(
      [&] { return server.Stderr().find("\"status\":499") != std::string::npos; },
      std::chrono::seconds(30)))
      << server.Stderr();
}

TEST_F(ServeOwnServerTest, FullQueueAndPerTokenLimitsAre429) {
  ServeProcess server(Args({"--max-concurrent", "1", "--max-queued", "0", "--token-rate", "50",
                            "--token-burst", "50"}),
                      (dir_ / "tmp").string());
  ASSERT_NE(server.port(), 0) << server.Stderr();
  HttpResponse first;
  std::jthread client([&] {
    first = HttpCall(server.port(), "POST", "/v1/execute", Execute(StartThenSleep(dir_ / "out", 3)),
                     Bearer(kToken1));
  });
  ASSERT_TRUE(WaitStarted()) << server.Stderr();
  const HttpResponse second =
      HttpCall(server.port(), "POST", "/v1/execute", Execute("1"), Bearer(kToken2));
  EXPECT_EQ(second.status, 429) << second.body;
  EXPECT_EQ(second.Header("retry-after"), "1");
  EXPECT_EQ(second.Json().at("code"), "queue_full");
  client.join();
  EXPECT_EQ(first.status, 200);
}

TEST_F(ServeOwnServerTest, PerTokenConcurrencyAndRate) {
  ServeProcess server(
      Args({"--token-max-concurrent", "1", "--token-rate", "0.001", "--token-burst", "4"}),
      (dir_ / "tmp").string());
  ASSERT_NE(server.port(), 0) << server.Stderr();
  HttpResponse first;
  std::jthread client([&] {
    first = HttpCall(server.port(), "POST", "/v1/execute", Execute(StartThenSleep(dir_ / "out", 3)),
                     Bearer(kToken1));
  });
  ASSERT_TRUE(WaitStarted()) << server.Stderr();
  const HttpResponse same =
      HttpCall(server.port(), "POST", "/v1/execute", Execute("1"), Bearer(kToken1));
  EXPECT_EQ(same.status, 429) << same.body;
  EXPECT_EQ(same.Json().at("code"), "token_concurrency");
  const HttpResponse other =
      HttpCall(server.port(), "POST", "/v1/execute", Execute("1"), Bearer(kToken2));
  EXPECT_EQ(other.status, 200) << "another token has its own quota: " << other.body;
  client.join();
  EXPECT_EQ(first.status, 200);
  // kToken1 has used 2 of its burst of 4 (the run and the refused one); the rate refills one
  // request in 1000 s, so the fifth request waits.
  EXPECT_EQ(HttpCall(server.port(), "GET", "/v1/tools", "", Bearer(kToken1)).status, 200);
  EXPECT_EQ(HttpCall(server.port(), "GET", "/v1/tools", "", Bearer(kToken1)).status, 200);
  const HttpResponse limited = HttpCall(server.port(), "GET", "/v1/tools", "", Bearer(kToken1));
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.Json().at("code"), "token_rate");
  EXPECT_FALSE(limited.Header("retry-after").empty());
}

TEST_F(ServeOwnServerTest, ARunAGuardDenialEndedWritesASecurityLine) {
  ServeProcess server(Args({}), (dir_ / "tmp").string());
  ASSERT_NE(server.port(), 0) << server.Stderr();
  const HttpResponse r = HttpCall(server.port(), "POST", "/v1/execute",
                                  Execute("import os\nos.fork()"), Bearer(kToken2));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json().at("outcome"), "error");
  EXPECT_TRUE(testing::Eventually([&] {
    const std::string err = server.Stderr();
    return err.find(
               "{\"type\":\"security\",\"token_id\":\"line:2\",\"outcome\":\"error\","
               "\"denial\":\"runtime guard: codeact guard: process creation: os.fork") !=
           std::string::npos;
  })) << server.Stderr();
  const HttpResponse plain = HttpCall(server.port(), "POST", "/v1/execute",
                                      Execute("raise ValueError('x')"), Bearer(kToken2));
  ASSERT_EQ(plain.status, 200);
  EXPECT_EQ(server.Stderr().find("ValueError"), std::string::npos)
      << "an ordinary error is no security event: " << server.Stderr();
}

// ---- JWT -------------------------------------------------------------------------------------

const std::string kSecret = "jwt-secret-for-the-serve-tests";

std::string Jwt(const bj::object& header, const bj::object& claims,
                const std::string& secret = kSecret) {
  const std::string input = internal::Base64UrlEncode(bj::serialize(header)) + "." +
                            internal::Base64UrlEncode(bj::serialize(claims));
  return input + "." + internal::Base64UrlEncode(internal::HmacSha256(secret, input));
}

std::int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_F(ServeOwnServerTest, JwtHs256OnlyWithExpAndAudience) {
  WriteFile(dir_ / "secret", kSecret + "\n");
  ServeProcess server({"--jwt-secret-file", (dir_ / "secret").string(), "--jwt-audience",
                       "codeact-tests", "--isolation", "process"},
                      (dir_ / "tmp").string());
  ASSERT_NE(server.port(), 0) << server.Stderr();
  const bj::object hs256{{"alg", "HS256"}, {"typ", "JWT"}};
  const bj::object good{
      {"sub", "alice"}, {"jti", "tok-17"}, {"aud", "codeact-tests"}, {"exp", Now() + 300}};
  auto status = [&](const std::string& token) {
    return HttpCall(server.port(), "GET", "/v1/tools", "", Bearer(token));
  };
  EXPECT_EQ(status(Jwt(hs256, good)).status, 200);
  const HttpResponse ran =
      HttpCall(server.port(), "POST", "/v1/execute", Execute("1"), Bearer(Jwt(hs256, good)));
  EXPECT_EQ(ran.status, 200);

  bj::object expired = good;
  expired["exp"] = Now() - 120;  // beyond the 60 s skew
  const HttpResponse e = status(Jwt(hs256, expired));
  EXPECT_EQ(e.status, 401);
  EXPECT_EQ(e.Json().at("error"), "invalid JWT: expired");
  bj::object within_skew = good;
  within_skew["exp"] = Now() - 20;
  EXPECT_EQ(status(Jwt(hs256, within_skew)).status, 200);
  bj::object no_exp = good;
  no_exp.erase("exp");
  EXPECT_EQ(status(Jwt(hs256, no_exp)).status, 401);

  const std::string none_token = internal::Base64UrlEncode(R"({"alg":"none","typ":"JWT"})") + "." +
                                 internal::Base64UrlEncode(bj::serialize(good)) + ".";
  const HttpResponse none = status(none_token);
  EXPECT_EQ(none.status, 401);
  EXPECT_NE(none.body.find("\\\"none\\\" refused"), std::string::npos) << none.body;
  const HttpResponse hs512 = status(Jwt(bj::object{{"alg", "HS512"}}, good));
  EXPECT_EQ(hs512.status, 401);
  EXPECT_NE(hs512.body.find("HS512"), std::string::npos) << hs512.body;

  bj::object wrong_aud = good;
  wrong_aud["aud"] = "someone-else";
  const HttpResponse aud = status(Jwt(hs256, wrong_aud));
  EXPECT_EQ(aud.status, 401);
  EXPECT_NE(aud.body.find("aud"), std::string::npos);
  const HttpResponse signature = status(Jwt(hs256, good, "another-secret-of-length"));
  EXPECT_EQ(signature.status, 401);
  EXPECT_EQ(signature.Json().at("error"), "invalid JWT: bad signature");

  EXPECT_TRUE(testing::Eventually([&] {
    return server.Stderr().find("\"token_id\":\"jti:tok-17\"") != std::string::npos;
  })) << server.Stderr();
}

}  // namespace
}  // namespace codeact
