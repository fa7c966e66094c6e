// `codeact serve` against the attacks of issue 33's service round, each as a black box over
// real HTTP: Host names that only start like a loopback name, framing the RFC requires to be
// refused, quotas that must hold on every route that runs code, and the session caps per caller.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "serve_support.hpp"
#include "test_support.hpp"

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

}  // namespace
}  // namespace codeact
