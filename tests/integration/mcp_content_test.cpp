// Files as MCP content, resources, prompts and 2026-07-28 session handles, over both transports
// as black boxes: a run that writes a PNG (named .dat: the bytes count) gets an image block, a CSV
// a resource_link that resources/read returns to the same caller and to no other; the prompt is
// the instructions; a stateless session handle reaches its session from its caller only, and a
// forged or altered one is refused.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "os/pipe.hpp"
#include "os/pipe_io.hpp"
#include "process/launch.hpp"
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

// A 1x1 PNG, and the code that writes it as /out/pixel.dat next to a CSV.
const std::string kPngBase64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+"
    "M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const std::string kWriteFiles =
    "import base64\nopen('/out/pixel.dat', 'wb').write(base64.b64decode('" + kPngBase64 +
    "'))\nopen('/out/table.csv', 'w').write('a,b\\n1,2\\n')\nprint('wrote')";

bj::object StatelessMeta() {
  return bj::object{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                    {"io.modelcontextprotocol/clientCapabilities", bj::object{}}};
}

std::string Message(int id, const std::string& method, bj::object params, bool stateless) {
  if (stateless) params["_meta"] = StatelessMeta();
  return bj::serialize(
      bj::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
}

std::string Call(int id, const std::string& code, const std::string& session = "",
                 bool stateless = false) {
  bj::object arguments{{"code", code}};
  if (!session.empty()) arguments["session"] = session;
  return Message(id, "tools/call", bj::object{{"name", "execute_code"}, {"arguments", arguments}},
                 stateless);
}

// The checks of a result of kWriteFiles: text, image, link; returns the link's URI.
std::string CheckFilesContent(const bj::object& result) {
  const bj::array& content = result.at("content").as_array();
  EXPECT_EQ(content.size(), 3u) << bj::serialize(result);
  if (content.size() != 3u) return "";
  EXPECT_EQ(content[0].at("type"), "text");
  // Files come in path order: pixel.dat, then table.csv.
  const bj::object& image = content[1].as_object();
  EXPECT_EQ(image.at("type"), "image");
  EXPECT_EQ(image.at("mimeType"), "image/png");
  EXPECT_EQ(image.at("data").as_string(), kPngBase64);
  const bj::object& link = content[2].as_object();
  EXPECT_EQ(link.at("type"), "resource_link");
  EXPECT_EQ(link.at("name"), "/out/table.csv");
  EXPECT_EQ(link.at("mimeType"), "text/csv");
  EXPECT_EQ(link.at("size"), 8);
  // structuredContent keeps the result JSON as it was: both files' bytes.
  EXPECT_EQ(result.at("structuredContent").at("files").as_array().size(), 2u);
  return std::string(link.at("uri").as_string());
}

// ---- stdio: `codeact mcp` driven one message at a time -----------------------------------------

class StdioServer {
 public:
  explicit StdioServer(std::vector<std::string> args) {
    auto in = internal::MakePipe();
    auto out = internal::MakePipe();
    auto err = internal::MakePipe();
    if (!in.ok() || !out.ok() || !err.ok()) return;
    internal::LaunchPlan plan;
    plan.executable = CODEACT_BINARY;
    plan.args = std::move(args);
    plan.child_fds = {in->read.get(), out->write.get(), err->write.get()};
    auto pid = internal::LaunchProcess(plan);
    if (!pid.ok()) {
      ADD_FAILURE() << pid.status().ToString();
      return;
    }
    pid_ = *pid;
    to_ = std::move(in->write);
    from_ = std::move(out->read);
    err_ = std::move(err->read);
    drain_ = std::thread([fd = err_.get()] {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    });
  }
  ~StdioServer() {
    to_.reset();  // end of input: the server finishes and exits
    if (pid_ > 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      int status = 0;
      while (::waitpid(pid_, &status, WNOHANG) != pid_) {
        if (std::chrono::steady_clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    if (drain_.joinable()) drain_.join();
  }

  // Sends `line` and returns the response with id `id` (empty after 120 s without it).
  bj::object Ask(const std::string& line, int id) {
    if (!internal::WriteAll(to_.get(), line + "\n").ok()) return {};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      std::size_t nl;
      while ((nl = buffer_.find('\n')) != std::string::npos) {
        const std::string one = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        bj::error_code ec;
        bj::value v = bj::parse(one, ec);
        if (!ec && v.is_object() && v.as_object().contains("id") &&
            v.as_object().at("id") == bj::value(id)) {
          return v.as_object();
        }
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return {};
      pollfd p{from_.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::read(from_.get(), buf, sizeof buf);
      if (n <= 0) return {};
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  pid_t pid_ = -1;
  internal::UniqueFd to_, from_, err_;
  std::thread drain_;
  std::string buffer_;
};

class McpContentStdioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = fs::temp_directory_path() /
           ("mcp-content-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(out_);
    fs::create_directories(out_);
  }
  void TearDown() override { fs::remove_all(out_); }
  fs::path out_;
};

TEST_F(McpContentStdioTest, APngIsAnImageAndACsvALinkThatResourcesReadReturns) {
  StdioServer server({"mcp", "--mount", out_.string() + ":/out:rw"});
  const bj::object init =
      server.Ask(Message(0, "initialize",
                         bj::object{{"protocolVersion", "2025-11-25"},
                                    {"capabilities", bj::object{}},
                                    {"clientInfo", bj::object{{"name", "t"}, {"version", "1"}}}},
                         false),
                 0);
  ASSERT_TRUE(init.contains("result")) << bj::serialize(init);
  EXPECT_TRUE(init.at("result").at("capabilities").as_object().contains("resources"));
  const bj::object call = server.Ask(Call(1, kWriteFiles), 1);
  ASSERT_TRUE(call.contains("result")) << bj::serialize(call);
  const std::string uri = CheckFilesContent(call.at("result").as_object());
  ASSERT_FALSE(uri.empty());

  const bj::object read =
      server.Ask(Message(2, "resources/read", bj::object{{"uri", uri}}, false), 2);
  ASSERT_TRUE(read.contains("result")) << bj::serialize(read);
  EXPECT_EQ(read.at("result").at("contents").at(0).at("text"), "a,b\n1,2\n");
  const bj::object list = server.Ask(Message(3, "resources/list", bj::object{}, false), 3);
  ASSERT_EQ(list.at("result").at("resources").as_array().size(), 1u) << bj::serialize(list);
  const bj::object unknown = server.Ask(
      Message(4, "resources/read", bj::object{{"uri", "codeact://files/0000/x.csv"}}, false), 4);
  EXPECT_EQ(unknown.at("error").at("code"), -32002) << bj::serialize(unknown);

  const bj::object prompt =
      server.Ask(Message(5, "prompts/get", bj::object{{"name", "codeact_instructions"}}, false), 5);
  ASSERT_TRUE(prompt.contains("result")) << bj::serialize(prompt);
  EXPECT_EQ(prompt.at("result").at("messages").at(0).at("content").at("text"),
            init.at("result").at("instructions"));
}

TEST_F(McpContentStdioTest, AStatelessSessionHandleKeepsStateAndAnAlteredOneIsRefused) {
  StdioServer server({"mcp"});
  const bj::object first = server.Ask(Call(1, "x = 41\nprint('set')", "new", true), 1);
  ASSERT_TRUE(first.contains("result")) << bj::serialize(first);
  const bj::object& r1 = first.at("result").at("structuredContent").as_object();
  // The handle is minted whether or not a session can be opened here.
  ASSERT_TRUE(r1.at("session").is_string()) << bj::serialize(r1);
  const std::string handle(r1.at("session").as_string());
  EXPECT_EQ(handle.rfind("cs1.", 0), 0u) << handle;

  std::string altered = handle;
  altered[10] = altered[10] == '0' ? '1' : '0';
  const bj::object refused = server.Ask(Call(2, "print(x)", altered, true), 2);
  EXPECT_EQ(refused.at("result").at("isError"), true);
  const bj::object& r2 = refused.at("result").at("structuredContent").as_object();
  EXPECT_EQ(r2.at("stdout"), "");
  EXPECT_NE(std::string(r2.at("message").as_string()).find("signature does not verify"),
            std::string::npos)
      << bj::serialize(r2);

  if (r1.at("outcome") != "ok") GTEST_SKIP() << "no session here: " << bj::serialize(r1);
  EXPECT_EQ(r1.at("session_state"), "new");
  const bj::object again = server.Ask(Call(3, "print(x + 1)", handle, true), 3);
  const bj::object& r3 = again.at("result").at("structuredContent").as_object();
  EXPECT_EQ(r3.at("stdout"), "42\n") << bj::serialize(r3);
  EXPECT_EQ(r3.at("session").as_string(), handle);
  EXPECT_EQ(r3.at("session_state"), "kept");
}

// ---- Streamable HTTP: two callers --------------------------------------------------------------

const std::string kAlice = "token-content-alice-0123456789";
const std::string kBob = "token-content-bob-0123456789";

class McpContentServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serve_ = new TokenServe("mcp-content-serve", {kAlice, kBob}, [](const fs::path& dir) {
      fs::create_directories(dir / "out");
      return std::vector<std::string>{"--mount", (dir / "out").string() + ":/out:rw", "--timeout",
                                      "20"};
    });
  }
  static void TearDownTestSuite() { delete serve_; }
  static ServeProcess& server() { return serve_->server(); }
  void SetUp() override { ASSERT_NE(server().port(), 0) << server().Stderr(); }

  // POST /mcp as `token`: a 2026-07-28 message with its mirrored headers, or a handshake-era one
  // in the MCP session `session`.
  static HttpResponse Post(const std::string& token, const std::string& body,
                           const std::string& method, const std::string& name = "",
                           const std::string& session = "") {
    testing::Headers h = {{"Accept", "application/json, text/event-stream"}};
    if (session.empty()) {
      h.emplace_back("MCP-Protocol-Version", "2026-07-28");
      h.emplace_back("Mcp-Method", method);
      if (!name.empty()) h.emplace_back("Mcp-Name", name);
    } else {
      h.emplace_back("Mcp-Session-Id", session);
    }
    return HttpCall(server().port(), "POST", "/mcp", body, Bearer(token, std::move(h)));
  }

  static TokenServe* serve_;
};
TokenServe* McpContentServeTest::serve_ = nullptr;

TEST_F(McpContentServeTest, ALinkedFileIsReadableByItsCallerOnlyAcrossSessions) {
  const HttpResponse call =
      Post(kAlice, Call(1, kWriteFiles, "", true), "tools/call", "execute_code");
  ASSERT_EQ(call.status, 200) << call.body;
  const std::string uri = CheckFilesContent(call.Json().at("result").as_object());
  ASSERT_FALSE(uri.empty());

  // A later stateless request of the same caller reads it.
  const HttpResponse read = Post(
      kAlice, Message(2, "resources/read", bj::object{{"uri", uri}}, true), "resources/read", uri);
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(read.Json().at("result").at("contents").at(0).at("text"), "a,b\n1,2\n");
  EXPECT_EQ(read.Json().at("result").at("resultType"), "complete");

  // So does an MCP session of the same caller (2025-11-25): files are the caller's.
  const HttpResponse init =
      HttpCall(server().port(), "POST", "/mcp",
               Message(3, "initialize",
                       bj::object{{"protocolVersion", "2025-11-25"},
                                  {"capabilities", bj::object{}},
                                  {"clientInfo", bj::object{{"name", "t"}, {"version", "1"}}}},
                       false),
               Bearer(kAlice, {{"Accept", "application/json, text/event-stream"}}));
  ASSERT_EQ(init.status, 200) << init.body;
  const std::string session = init.Header("mcp-session-id");
  const HttpResponse listed =
      Post(kAlice, Message(4, "resources/list", bj::object{}, false), "", "", session);
  ASSERT_EQ(listed.status, 200) << listed.body;
  bool found = false;
  const bj::value listed_json = listed.Json();  // alive while the loop reads it
  for (const auto& r : listed_json.at("result").at("resources").as_array()) {
    found = found || r.at("uri").as_string() == uri;
  }
  EXPECT_TRUE(found) << listed.body;

  // Another caller gets "not found", as for a URI that never existed.
  const HttpResponse other = Post(
      kBob, Message(5, "resources/read", bj::object{{"uri", uri}}, true), "resources/read", uri);
  EXPECT_EQ(other.Json().at("error").at("code"), -32602) << other.body;
  EXPECT_NE(other.body.find("Resource not found"), std::string::npos) << other.body;
}

TEST_F(McpContentServeTest, AHandleReachesItsSessionFromItsCallerOnly) {
  const HttpResponse first =
      Post(kAlice, Call(1, "x = 41\nprint('set')", "new", true), "tools/call", "execute_code");
  ASSERT_EQ(first.status, 200) << first.body;
  const bj::object r1 = first.Json().at("result").at("structuredContent").as_object();
  ASSERT_TRUE(r1.at("session").is_string()) << bj::serialize(r1);
  const std::string handle(r1.at("session").as_string());

  const HttpResponse stolen =
      Post(kBob, Call(2, "print(x)", handle, true), "tools/call", "execute_code");
  ASSERT_EQ(stolen.status, 200) << stolen.body;
  const bj::value r2 = stolen.Json().at("result");
  EXPECT_EQ(r2.at("isError"), true);
  EXPECT_EQ(r2.at("structuredContent").at("stdout"), "");
  EXPECT_NE(stolen.body.find("belongs to another caller"), std::string::npos) << stolen.body;

  const std::string forged =
      "cs1." + std::string(32, 'a') + "." + std::string(16, 'b') + "." + std::string(64, 'c');
  const HttpResponse bad =
      Post(kAlice, Call(3, "print(x)", forged, true), "tools/call", "execute_code");
  EXPECT_EQ(bad.Json().at("result").at("isError"), true);
  EXPECT_NE(bad.body.find("session handle is refused"), std::string::npos) << bad.body;

  if (r1.at("outcome") != "ok") GTEST_SKIP() << "no session here: " << bj::serialize(r1);
  // Each stateless request is a server of its own; the handle still reaches the session.
  const HttpResponse again =
      Post(kAlice, Call(4, "print(x + 1)", handle, true), "tools/call", "execute_code");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.Json().at("result").at("structuredContent").at("stdout"), "42\n") << again.body;
}

}  // namespace
}  // namespace codeact
