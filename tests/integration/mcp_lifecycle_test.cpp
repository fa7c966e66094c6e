// `codeact mcp` as a live process under faults: SIGTERM/SIGINT shut it down cleanly (calls in
// flight get the grace, then are cancelled and answered; scratch directories go; exit 0), and
// what a SIGKILLed server left behind is removed by the next start on the same TMPDIR.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "os/pipe.hpp"
#include "os/pipe_io.hpp"
#include "os/unique_fd.hpp"
#include "process/launch.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A `codeact mcp` child with pipes on its stdin, stdout and stderr, and TMPDIR set.
class McpProcess {
 public:
  McpProcess(std::vector<std::string> args, const std::string& tmpdir) {
    auto in = internal::MakePipe();
    auto out = internal::MakePipe();
    auto err = internal::MakePipe();
    if (!in.ok() || !out.ok() || !err.ok()) return;
    internal::LaunchPlan plan;
    plan.executable = CODEACT_BINARY;
    plan.args = {
        "mcp", "--no-validate"};  // the code below uses os freely; the validator is not under test
    plan.args.insert(plan.args.end(), args.begin(), args.end());
    plan.environment = testing::EnvironmentWithTmpdir(tmpdir);
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
  }
  ~McpProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      Wait(std::chrono::seconds(30));
    }
  }

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  void Send(const std::string& line) {
    const std::string framed = line + "\n";
    ASSERT_TRUE(internal::WriteAll(to_.get(), framed).ok());
  }
  void CloseStdin() { to_.reset(); }

  // The next response line, or nothing after `timeout`.
  std::optional<bj::object> Next(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
        const std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        bj::error_code ec;
        bj::value v = bj::parse(line, ec);
        EXPECT_FALSE(ec) << line;
        if (ec || !v.is_object()) return std::nullopt;
        return v.as_object();
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return std::nullopt;
      pollfd p{from_.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::read(from_.get(), buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }

  void Signal(int sig) { ::kill(pid_, sig); }

  // The exit code (128 + signal when killed), or -1 if it did not end in time.
  int Wait(std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  std::string Stderr() {
    std::string text;
    char buf[4096];
    pollfd p{err_.get(), POLLIN, 0};
    while (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
      const ssize_t n = ::read(err_.get(), buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    return text;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  internal::UniqueFd to_, from_, err_;
  std::string buffer_;
};

const char* const kInitialize =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

std::string Call(int id, const std::string& code) {
  return bj::serialize(bj::object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"method", "tools/call"},
      {"params", bj::object{{"name", "execute_code"}, {"arguments", bj::object{{"code", code}}}}}});
}

// Code that writes its pid to `<mount>/started` (the mount is at /out inside the sandbox, at its
// host path at the process level), then sleeps.
std::string StartThenSleep(const std::string& host_dir, int seconds) {
  return "import os, time\n"
         "d = '/out' if os.path.isdir('/out') else " +
         bj::serialize(bj::value(host_dir)) +
         "\n"
         "open(d + '/started.tmp', 'w').write(str(os.getpid()))\n"
         "os.rename(d + '/started.tmp', d + '/started')\n"
         "time.sleep(" +
         std::to_string(seconds) + ")\n";
}

std::set<std::string> ScratchEntries(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("codeact-", 0) == 0) names.insert(name);
  }
  return names;
}

class McpLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("mcp-lifecycle-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    tmp_ = root_ / "tmp";
    out_ = root_ / "out";
    fs::create_directories(tmp_);
    fs::create_directories(out_);
  }
  void TearDown() override { fs::remove_all(root_); }

  bool WaitStarted() {
    return testing::Eventually([&] { return fs::exists(out_ / "started"); },
                               std::chrono::seconds(60));
  }
  pid_t StartedPid() {
    std::ifstream in(out_ / "started");
    pid_t pid = 0;
    in >> pid;
    return pid;
  }

  fs::path root_, tmp_, out_;
};

TEST_F(McpLifecycleTest, SigtermCancelsARunAfterTheGraceAnswersItAndLeavesNothing) {
  McpProcess server(
      {"--isolation", "process", "--shutdown-grace", "1", "--mount", out_.string() + ":/out"},
      tmp_);
  ASSERT_TRUE(server.started());
  server.Send(kInitialize);
  ASSERT_TRUE(server.Next().has_value()) << server.Stderr();
  EXPECT_FALSE(ScratchEntries(tmp_).empty())
      << "the warm pool keeps its children's directories here";
  server.Send(Call(1, StartThenSleep(out_.string(), 120)));
  ASSERT_TRUE(WaitStarted()) << server.Stderr();
  const pid_t child = StartedPid();
  ASSERT_GT(child, 0);

  const auto sent = Clock::now();
  server.Signal(SIGTERM);
  const auto reply = server.Next(std::chrono::seconds(30));
  ASSERT_TRUE(reply.has_value()) << "no reply to the call in flight; stderr: " << server.Stderr();
  const auto waited = Clock::now() - sent;
  EXPECT_GE(waited, std::chrono::milliseconds(900)) << "the grace period was not given";
  EXPECT_EQ(reply->at("id"), 1);
  const auto& result = reply->at("result").as_object();
  EXPECT_EQ(result.at("isError"), true);
  EXPECT_EQ(result.at("structuredContent").at("outcome"), "cancelled");
  // First; a non-root host adds notes on the bounds that do not apply there after it.
  const std::string message(result.at("structuredContent").at("message").as_string());
  EXPECT_EQ(message.rfind("cancelled: the server is shutting down", 0), 0u) << message;
  EXPECT_EQ(server.Wait(std::chrono::seconds(30)), 0) << server.Stderr();
  EXPECT_TRUE(testing::WaitAllDead({child}).empty()) << "the run's process outlived the server";
  EXPECT_EQ(ScratchEntries(tmp_), std::set<std::string>{}) << "scratch directories left behind";
}

TEST_F(McpLifecycleTest, SigintLetsACallThatEndsWithinTheGraceFinish) {
  McpProcess server({"--isolation", "process", "--mount", out_.string() + ":/out"},
                    tmp_);  // grace 10 s
  ASSERT_TRUE(server.started());
  server.Send(kInitialize);
  ASSERT_TRUE(server.Next().has_value()) << server.Stderr();
  server.Send(Call(2, StartThenSleep(out_.string(), 1) + "print('finished')\n"));
  ASSERT_TRUE(WaitStarted()) << server.Stderr();
  server.Signal(SIGINT);
  const auto reply = server.Next(std::chrono::seconds(30));
  ASSERT_TRUE(reply.has_value()) << server.Stderr();
  EXPECT_EQ(reply->at("result").at("structuredContent").at("outcome"), "ok");
  EXPECT_EQ(reply->at("result").at("structuredContent").at("stdout"), "finished\n");
  EXPECT_EQ(server.Wait(std::chrono::seconds(30)), 0) << server.Stderr();
  EXPECT_EQ(ScratchEntries(tmp_), std::set<std::string>{});
}

TEST_F(McpLifecycleTest, WhatASigkilledServerLeftIsRemovedByTheNextStart) {
  std::set<std::string> left;
  {
    McpProcess server({"--mount", out_.string() + ":/out"}, tmp_);
    ASSERT_TRUE(server.started());
    server.Send(kInitialize);
    ASSERT_TRUE(server.Next().has_value()) << server.Stderr();
    server.Send(Call(1, StartThenSleep(out_.string(), 120)));
    ASSERT_TRUE(WaitStarted()) << server.Stderr();
    server.Signal(SIGKILL);
    EXPECT_EQ(server.Wait(std::chrono::seconds(30)), 128 + SIGKILL);
    left = ScratchEntries(tmp_);
  }
  // The run's directory, the pool's and the compiled runner's.
  bool run_dir = false, runner_dir = false;
  for (const auto& name : left) {
    run_dir = run_dir || name.rfind("codeact-run-", 0) == 0;
    runner_dir = runner_dir || name.rfind("codeact-runner-", 0) == 0;
  }
  ASSERT_TRUE(run_dir && runner_dir)
      << "the SIGKILL left nothing to clean; the test proves nothing";

  McpProcess next({"--quiet"}, tmp_);
  ASSERT_TRUE(next.started());
  next.Send(kInitialize);
  ASSERT_TRUE(next.Next().has_value()) << next.Stderr();
  for (const auto& name : left)
    EXPECT_FALSE(fs::exists(tmp_ / name)) << name << " survived the next start";
  next.CloseStdin();
  EXPECT_EQ(next.Wait(std::chrono::seconds(60)), 0);
  EXPECT_EQ(ScratchEntries(tmp_), std::set<std::string>{});
}

}  // namespace
}  // namespace codeact
