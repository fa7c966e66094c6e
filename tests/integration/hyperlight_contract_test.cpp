// The hyperlight backend against the real SDK's contract, through the fake SDK in tests/fakes,
// which is as strict as the real one where codeact could get it wrong (its docstring lists how):
// network targets as URLs, the guest's http_get/http_post, the guest's 1 MiB argument cap and
// int64 conversion, flat /input and /output, the worker's start-up (cache dir, file size, guest
// memory), a minimal guest standard library, and a sandbox that failed. Also the int64 rule on
// the local backend, which shares it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "codeact/hyperlight_provider.hpp"
#include "files/mount_capture.hpp"
#include "process/child.hpp"
#include "process/helper_command.hpp"
#include "process/run_cgroup.hpp"
#include "testing/hyperlight_support.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
using testing::FakeProvider;
using testing::kFakeSdk;
using testing::MakeDir;
using testing::Unvalidated;
using testing::WriteFile;

// A loopback HTTP/1.1 server answering every request with "METHOD PATH BODY", one connection at
// a time, until destroyed.
class LoopbackServer {
 public:
  LoopbackServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 8) != 0) {
      throw std::runtime_error("cannot listen on loopback");
    }
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~LoopbackServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }

 private:
  void Serve() {
    while (!stop_) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      std::size_t header_end = std::string::npos;
      std::size_t want = 0;
      while (true) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
        if (header_end == std::string::npos && (header_end = in.find("\r\n\r\n")) != in.npos) {
          const auto cl = in.find("Content-Length: ");
          want = header_end + 4 +
                 (cl != in.npos && cl < header_end ? std::stoul(in.substr(cl + 16)) : 0);
        }
        if (header_end != std::string::npos && in.size() >= want) break;
      }
      ++requests_;
      const std::string line = in.substr(0, in.find("\r\n"));
      const std::string method = line.substr(0, line.find(' '));
      const std::string path = line.substr(method.size() + 1, line.rfind(' ') - method.size() - 1);
      const std::string body =
          method + " " + path + " " + (header_end == in.npos ? "" : in.substr(header_end + 4));
      const std::string out = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\nConnection: close\r\n\r\n" + body;
      [[maybe_unused]] ssize_t w = ::write(c, out.data(), out.size());
      ::close(c);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_ = false;
  std::atomic<int> requests_ = 0;
  std::thread thread_;
};

HostTool EchoTool(std::string result_json) {
  return {"echo", "Echo", R"({"type":"object","properties":{}})", false,
          [result_json](const std::string& kwargs) {
            return ToolResult::Success(result_json.empty() ? kwargs : result_json);
          }};
}

TEST(HyperlightContractTest, ABareHostIsNotUnavailableAndReachesTheSdkAsAnHttpsUrl) {
  auto p = FakeProvider(Unvalidated());
  ASSERT_TRUE(p->AddNetworkTarget("api.example.com").ok());
  ASSERT_TRUE(p->AddNetworkTarget("http://127.0.0.1:8080:get,POST").ok());
  const ExecutionResult r = p->Execute("fake_allowed_domains");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  // In the registry's order (sorted as given).
  EXPECT_EQ(bj::parse(r.output_json), bj::parse(R"([["https://api.example.com",null],)"
                                                R"(["http://127.0.0.1:8080",["GET","POST"]]])"));
  const std::string description = p->ToolDescription(p->Snapshot());
  EXPECT_NE(description.find("- https://api.example.com (any method)\n"), std::string::npos)
      << description;
  EXPECT_NE(description.find("- http://127.0.0.1:8080 (GET, POST)\n"), std::string::npos);
  EXPECT_NE(description.find("await http_get(url)"), std::string::npos) << description;
  EXPECT_NE(description.find("await http_post(url"), std::string::npos);
}

TEST(HyperlightContractTest, TheSdkRefusesABareHostItself) {
  // What the worker must never send: the fake, like the SDK, parses targets as URLs when the VM
  // is built, so the first run fails and the backend is unavailable with the SDK's reason.
  auto dir = internal::TempDir::Create("codeact-test-");
  ASSERT_TRUE(dir.ok());
  const std::string probe = dir->path() + "/probe.py";
  WriteFile(probe, testing::Program("hyperlight_contract/the_sdk_refuses_a_bare_host_itself"));
  auto r = internal::RunCommand({"/usr/bin/env", "XDG_CACHE_HOME=" + dir->path(),
                                 "/usr/bin/python3.11", "-I", probe, kFakeSdk},
                                "", std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stdout_text, "invalid URL for network permission: relative URL without a base\n")
      << r->stderr_text;
}

// A target is parsed once, when it is added: a typo is refused there, naming the target, and
// never reaches a run.
TEST(HyperlightContractTest, TargetTyposAreRefusedWhenAddedNamingTheTarget) {
  auto p = FakeProvider();
  const Status typo = p->AddNetworkTarget("api.example.com:GTE");
  EXPECT_EQ(typo.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(typo.message().find("network target \"api.example.com:GTE\": unknown HTTP method"),
            std::string::npos)
      << typo.message();
  const Status port = p->AddNetworkTarget("api.example.com:8443");
  EXPECT_EQ(port.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      port.message().find("write https://api.example.com:8443 or http://api.example.com:8443"),
      std::string::npos)
      << port.message();
  EXPECT_TRUE(p->ListNetworkTargets().empty());
  EXPECT_EQ(p->Execute("print(1)").outcome, Outcome::kOk);
}

TEST(HyperlightContractTest, UserCodeReachesAnAllowedTargetWithHttpGetAndPost) {
  LoopbackServer server;
  LoopbackServer other;
  auto p = FakeProvider(Unvalidated());
  ASSERT_TRUE(p->AddNetworkTarget(server.url() + ":GET").ok());
  const ExecutionResult r =
      p->Execute("r = await http_get('" + server.url() +
                 "/hello?x=1')\n"
                 "print(r['status'], r['body'])\n"
                 "for url, call in (('" +
                 server.url() + "/p', lambda u: http_post(u, body='{}')), ('" + other.url() +
                 "/', http_get)):\n"
                 "    try:\n"
                 "        await call(url)\n"
                 "    except ToolError as e:\n"
                 "        print(e.error_type, 'denied' if 'Denied' in e.message else e.message)\n");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "200 GET /hello?x=1 \nHttpError denied\nHttpError denied\n");
  EXPECT_EQ(server.requests(), 1);
  EXPECT_EQ(other.requests(), 0);

  p->ClearNetworkTargets();
  ASSERT_TRUE(p->AddNetworkTarget(server.url()).ok());
  const ExecutionResult post =
      p->Execute("(await http_post('" + server.url() + "/items', body='{\"a\": 1}'))['body']");
  ASSERT_EQ(post.outcome, Outcome::kOk) << post.message << post.stderr_text;
  EXPECT_EQ(bj::parse(post.output_json).as_string(), "POST /items {\"a\": 1}");

  // Without targets the functions are absent, as on the local backend.
  p->ClearNetworkTargets();
  const ExecutionResult none = p->Execute("http_get");
  EXPECT_EQ(none.outcome, Outcome::kError);
  ASSERT_TRUE(none.error.has_value());
  EXPECT_EQ(none.error->type, "NameError");
}

TEST(HyperlightContractTest, AToolArgumentOverTheGuestCapIsAToolError) {
  for (std::int64_t frame : {std::int64_t{1} << 20, std::int64_t{8} << 20}) {
    ProviderOptions o;
    o.limits.max_frame_bytes = frame;
    auto p = FakeProvider(o);
    EXPECT_TRUE(p->AddTool(EchoTool("")).ok());
    const ExecutionResult r = p->Execute(
        testing::Program("hyperlight_contract/a_tool_argument_over_the_guest_cap_is_a_tool_error"));
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
    EXPECT_NE(r.stdout_text.find("ArgumentsTooLarge the call's 2097188 bytes of JSON arguments "
                                 "exceed the hyperlight guest's limit of 1048576 bytes"),
              std::string::npos)
        << r.stdout_text;
    EXPECT_EQ(r.output_json, "1000");
    EXPECT_EQ(r.tool_calls, 1);
  }
}

TEST(HyperlightContractTest, AnOutputOverTheGuestCapComesBackWholeOrAsAnOutputLimit) {
  ProviderOptions o;
  o.limits.max_output_bytes = 4LL << 20;
  o.limits.max_frame_bytes = 8LL << 20;
  auto p = FakeProvider(o);
  const ExecutionResult r = p->Execute("['x' * (1 << 20), 'y' * (1 << 20), (1 << 64) - 1]");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  const bj::array out = bj::parse(r.output_json).as_array();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].as_string().size(), 1u << 20);
  EXPECT_EQ(out[2].as_uint64(), ~std::uint64_t{0}) << "an exact integer, not a float";
  const ExecutionResult big = p->Execute("'z' * (5 << 20)");
  EXPECT_EQ(big.outcome, Outcome::kOutputLimit) << big.message;
  EXPECT_NE(big.message.find("exceed the limit of 4194304 bytes"), std::string::npos)
      << big.message;
}

// Integers beyond int64 in tool arguments or results: a ToolError on both backends.
void ExpectBigIntegersRefused(CodeActProvider& p) {
  EXPECT_TRUE(p.AddTool(EchoTool("")).ok());
  EXPECT_TRUE(
      p.AddTool({"huge", "A result beyond int64", R"({"type":"object","properties":{}})", false,
                 [](const std::string&) {
                   return ToolResult::Success(R"({"n":[1,18446744073709551616]})");
                 }})
          .ok());
  const ExecutionResult r = p.Execute(testing::Program("hyperlight_contract/big_integers_refused"));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "IntegerOutOfRange | an argument at ['n'][1] is an integer outside the signed 64-bit "
            "range (-9223372036854775808..9223372036854775807); pass it as a string\n"
            "IntegerOutOfRange | the tool's result holds the integer 18446744073709551616, "
            "outside the signed 64-bit range; the tool must return it as a string\n");
  EXPECT_EQ(bj::parse(r.output_json),
            bj::parse(R"({"n":9223372036854775807,"m":-9223372036854775808})"));
}

TEST(HyperlightContractTest, IntegersBeyondInt64AreToolErrorsOnHyperlight) {
  auto p = FakeProvider();
  ExpectBigIntegersRefused(*p);
}

TEST(HyperlightContractTest, IntegersBeyondInt64AreToolErrorsOnTheLocalBackend) {
  auto p = LocalCodeActProvider::Create();
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ExpectBigIntegersRefused(**p);
}

TEST(HyperlightContractTest, InputAndOutputAreFlatWithAClearErrorForNestedPaths) {
  auto dir = internal::TempDir::Create("codeact-test-");
  ASSERT_TRUE(dir.ok());
  std::filesystem::create_directories(dir->path() + "/in");
  WriteFile(dir->path() + "/in/top.txt", "top");
  ProviderOptions o = Unvalidated();
  o.executor.hyperlight.inputs = {dir->path() + "/in"};
  auto p = FakeProvider(o);
  const ExecutionResult ok =
      p->Execute("open('/output/copy.txt', 'w').write(open('/input/top.txt').read())");
  ASSERT_EQ(ok.outcome, Outcome::kOk) << ok.message << ok.stderr_text;
  ASSERT_EQ(ok.files.size(), 1u);
  EXPECT_EQ(ok.files[0].path, "/output/copy.txt");
  EXPECT_EQ(ok.files[0].data, "top");
  for (const std::string path : {"/input/sub/deep.txt", "/output/sub/new.txt"}) {
    const ExecutionResult nested = p->Execute("open('" + path + "', 'w')");
    EXPECT_EQ(nested.outcome, Outcome::kError) << path;
    ASSERT_TRUE(nested.error.has_value());
    EXPECT_EQ(nested.error->type, "FileNotFoundError");
    EXPECT_NE(nested.error->message.find("are flat in this sandbox: no subdirectories"),
              std::string::npos)
        << nested.error->message;
  }
  // Past the prelude's open(), the fake refuses a '/' in a name as the SDK's filesystem does.
  const ExecutionResult raw = p->Execute(
      "try:\n    __builtins__['open']('/input/sub/deep.txt')\nexcept OSError as e:\n"
      "    print(e.errno == 22)");
  EXPECT_EQ(raw.stdout_text, "True\n") << raw.message << raw.stderr_text;
  EXPECT_NE(p->ToolDescription(p->Snapshot()).find("both are flat"), std::string::npos);
}

TEST(HyperlightContractTest, TheWorkerStartsWithACacheDirVmSizedLimitsAndTheGuestMemory) {
  ProviderOptions o = Unvalidated();
  o.limits.memory_bytes = 256LL << 20;
  o.limits.max_file_size_bytes = 1LL << 20;
  std::string cache_file;
  {
    auto p = FakeProvider(o);
    const ExecutionResult r = p->Execute(
        "import resource\n"
        "[fake_sizes, fake_cache_file, resource.getrlimit(resource.RLIMIT_AS)[1],"
        " resource.getrlimit(resource.RLIMIT_FSIZE)]");
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
    const bj::array out = bj::parse(r.output_json).as_array();
    // memory_bytes is the guest's memory: its stack is what the SDK's runtime needs beside a heap
    // this large (67 MiB + 1/256 + 256 KiB), the rest its heap.
    EXPECT_EQ(out[0], bj::parse(R"({"heap_size":196870144,"stack_size":71565312})"));
    cache_file = std::string(out[1].as_string());
    EXPECT_NE(cache_file.find("/codeact-hl-cache-"), std::string::npos) << cache_file;
    EXPECT_EQ(std::filesystem::file_size(cache_file), 70u << 20)
        << "the guest module was written past max_file_size_bytes";
    EXPECT_EQ(out[2].to_number<std::int64_t>(), (256LL << 20) + (32LL << 30));
    // While the code runs, its files are held to max_file_size_bytes.
    EXPECT_EQ(out[3], bj::parse("[1048576, 1073741824]"));
    // memory_bytes's cgroup, where one can be made: 2 x 256 MiB + 512 MiB for the whole worker.
    if (internal::CgroupSite::ForThisProcess()->memory()) {
      const ExecutionResult cg = p->Execute("open('/proc/self/cgroup').read()");
      ASSERT_EQ(cg.outcome, Outcome::kOk) << cg.message << cg.stderr_text;
      const std::string text(bj::parse(cg.output_json).as_string());
      int found = 0;
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);) {
        const std::string name = line.substr(line.rfind('/') + 1);
        if (name.empty()) continue;
        for (const auto& h : internal::CgroupSite::ForThisProcess()->hierarchies) {
          if (!h.memory) continue;
          const std::string file =
              h.dir + "/" + name + (h.v2 ? "/memory.max" : "/memory.limit_in_bytes");
          if (!std::filesystem::exists(file)) continue;
          EXPECT_EQ(testing::ReadFile(file), std::to_string(1LL << 30) + "\n") << file;
          ++found;
        }
      }
      EXPECT_GT(found, 0) << "the worker is in no memory cgroup of codeact's: " << text;
    } else {
      std::cout << "no memory cgroup can be made here: the worker's group is not checked\n";
    }
    const ExecutionResult big = p->Execute("open('/output/big.bin', 'wb').write(b'x' * (2 << 20))");
    EXPECT_EQ(big.outcome, Outcome::kError);
    ASSERT_TRUE(big.error.has_value());
    EXPECT_EQ(big.error->type, "OSError") << big.error->message;
  }
  EXPECT_TRUE(testing::Eventually([&] { return !std::filesystem::exists(cache_file); }))
      << "the private cache went with the executor";
}

TEST(HyperlightContractTest, AMinimalGuestStdlibStillRunsToolsAndReportsErrors) {
  auto dir = internal::TempDir::Create("codeact-test-");
  ASSERT_TRUE(dir.ok());
  WriteFile(dir->path() + "/fake-guest-minimal-stdlib", "");
  ProviderOptions o;
  o.executor.hyperlight.inputs = {dir->path()};
  auto p = FakeProvider(o);
  EXPECT_TRUE(p->AddTool(EchoTool("42")).ok());
  const ExecutionResult r = p->Execute("x = await echo()\ny = await call_tool('echo')\nx + y");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.output_json, "84");
  const ExecutionResult err = p->Execute("def f():\n    return 1 / 0\nf()\n");
  EXPECT_EQ(err.outcome, Outcome::kError);
  ASSERT_TRUE(err.error.has_value());
  EXPECT_EQ(err.error->type, "ZeroDivisionError");
  EXPECT_EQ(err.error->traceback,
            testing::Program(
                "hyperlight_contract/a_minimal_guest_stdlib_still_runs_tools_and_reports_errors"));
  const ExecutionResult gather = p->Execute("import asyncio\nawait asyncio.gather(echo())");
  ASSERT_TRUE(gather.error.has_value());
  EXPECT_EQ(gather.error->type, "ModuleNotFoundError");
}

TEST(HyperlightContractTest, AnSdkFailureDropsTheSandboxAndRecyclesTheWorker) {
  auto dir = internal::TempDir::Create("codeact-test-");
  ASSERT_TRUE(dir.ok());
  ProviderOptions o = Unvalidated();
  o.executor.hyperlight.inputs = {dir->path()};
  auto p = FakeProvider(o);
  const ExecutionResult first = p->Execute("import os\n[os.getpid(), fake_sandbox_id]");
  ASSERT_EQ(first.outcome, Outcome::kOk) << first.message << first.stderr_text;
  WriteFile(dir->path() + "/fake-guest-restore-fails", "");
  const ExecutionResult failed = p->Execute("print('never')");
  EXPECT_EQ(failed.outcome, Outcome::kError);
  EXPECT_NE(failed.message.find("the guest failed: RuntimeError: Restore failed"),
            std::string::npos)
      << failed.message;
  EXPECT_EQ(failed.stdout_text, "");
  const bj::array before = bj::parse(first.output_json).as_array();
  EXPECT_TRUE(
      testing::WaitAllDead({static_cast<pid_t>(before[0].to_number<std::int64_t>())}).empty())
      << "the worker whose sandbox failed is gone";
  const ExecutionResult next = p->Execute("import os\n[os.getpid(), fake_sandbox_id]");
  ASSERT_EQ(next.outcome, Outcome::kOk) << next.message << next.stderr_text;
  EXPECT_NE(bj::parse(next.output_json).as_array()[0], before[0]) << "a new worker";
}

}  // namespace
}  // namespace codeact
