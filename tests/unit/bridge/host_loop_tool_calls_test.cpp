// HostLoop's tool calls against an in-process "child": cancelled when the run ends, bounded
// workers, arguments too deep, the backlog budget of answers and waiting calls, and the wake-up
// pipe made ahead.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "bridge/host_loop.hpp"
#include "bridge/tool_workers.hpp"
#include "os/pipe.hpp"
#include "unit/bridge/host_loop_fixture.hpp"

namespace codeact::internal {
namespace {

using namespace std::chrono_literals;
using namespace host_loop_test;  // NOLINT(build/namespaces): the shared helpers

// However a run ends, its tool calls learn it through their context and stop; the worker that
// ran the call is free again.
TEST(HostLoopTest, ToolCallsAreCancelledWhenTheRunEnds) {
  Pipe from_child;
  Pipe to_child;
  ASSERT_TRUE(WriteToolCall(from_child, 1, "hang"));

  auto started = std::make_shared<std::promise<void>>();
  auto stopped = std::make_shared<std::promise<std::string>>();
  HostTool tool;
  tool.name = "hang";
  tool.cancellable_handler = [started, stopped](const std::string&,
                                                const ToolCallContext& context) {
    std::promise<void> wake;
    auto registration = context.cancel.OnCancel([&wake] { wake.set_value(); });
    started->set_value();
    wake.get_future().wait();  // a handler blocked on something, until its run ends
    stopped->set_value(context.cancel.reason());
    return ToolResult::Success("null");
  };
  const std::vector<HostTool> tools{tool};
  const ExecutionLimits limits;
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  std::future<void> handler_started = started->get_future();
  std::future<std::string> handler_stopped = stopped->get_future();
  const LoopResult result =
      loop.Run("pass", std::chrono::steady_clock::now() + 300ms, /*child_ready=*/true);
  EXPECT_EQ(result.end, LoopEnd::kTimeout);
  ASSERT_EQ(handler_started.wait_for(10s), std::future_status::ready) << "the handler never ran";
  ASSERT_EQ(handler_stopped.wait_for(10s), std::future_status::ready)
      << "the handler outlived its run";
  EXPECT_EQ(handler_stopped.get(), "the run ended");
  EXPECT_TRUE(Eventually([] { return ToolWorkers::Instance().Counts().busy == 0; }));
}

// At most kMaxThreads handlers run at once, process-wide; more wait their turn, and once the
// work is done no more than kMaxIdle workers stay.
TEST(HostLoopTest, TheToolWorkersAreBounded) {
  const ToolWorkerCounts before = ToolWorkers::Instance().Counts();
  EXPECT_LE(before.threads, ToolWorkers::kMaxThreads);
  std::atomic<int> ran{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  const int jobs = ToolWorkers::kMaxThreads + 10;
  for (int i = 0; i < jobs; ++i) {
    ToolWorkers::Instance().Run([&ran, released] {
      released.wait();
      ++ran;
    });
  }
  const ToolWorkerCounts busy = ToolWorkers::Instance().Counts();
  EXPECT_EQ(busy.threads, ToolWorkers::kMaxThreads);
  EXPECT_GE(busy.queued, 10);
  release.set_value();
  EXPECT_TRUE(Eventually([&] { return ran.load() == jobs; }));
  EXPECT_TRUE(Eventually([] { return ToolWorkers::Instance().Counts().busy == 0; }));
  // Idle workers beyond kMaxIdle leave; the rest wait for work.
  EXPECT_TRUE(
      Eventually([] { return ToolWorkers::Instance().Counts().threads <= ToolWorkers::kMaxIdle; }));
}

// The "child" of a run with one tool call: reads what the loop sends into `sent` until it holds
// `answer`, then ends its run with a complete frame.
std::thread ChildEndingAfter(std::string answer, Pipe& to_child, Pipe& from_child,
                             std::string& sent) {
  return std::thread([answer = std::move(answer), &to_child, &from_child, &sent] {
    char buf[4096];
    while (sent.find(answer) == std::string::npos) {
      const ssize_t n = read(to_child.read_fd, buf, sizeof buf);
      if (n <= 0) return;
      sent.append(buf, static_cast<std::size_t>(n));
    }
    const std::string complete = R"({"type":"complete","output_present":false})"
                                 "\n";
    EXPECT_EQ(write(from_child.write_fd, complete.data(), complete.size()),
              static_cast<ssize_t>(complete.size()));
  });
}

// Arguments too deep to parse get a catchable error for their call; the run goes on. A frame
// too deep that is not a tool call ends the run, and says why.
TEST(HostLoopTest, DeeplyNestedToolArgumentsAreRefusedAsSuch) {
  std::string deep = "1";
  for (int i = 0; i < 200; ++i) deep = "[" + deep + "]";
  Pipe from_child;
  Pipe to_child;
  const std::string call =
      R"({"type":"tool_call","id":1,"name":"t","kwargs":{"x":)" + deep + "}}\n";
  ASSERT_EQ(write(from_child.write_fd, call.data(), call.size()),
            static_cast<ssize_t>(call.size()));
  std::string sent;
  std::thread child = ChildEndingAfter("ToolArgumentsTooDeep", to_child, from_child, sent);
  const std::vector<HostTool> tools;
  const ExecutionLimits limits;
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  const LoopResult r =
      loop.Run("pass", std::chrono::steady_clock::now() + 10s, /*child_ready=*/true);
  child.join();
  EXPECT_EQ(r.end, LoopEnd::kComplete) << r.message;
  EXPECT_EQ(r.tool_calls, 1);
  EXPECT_NE(
      sent.find(
          R"("id":1,"ok":false,"error_type":"ToolArgumentsTooDeep","message":"the arguments of t are nested deeper than 128 levels")"),
      std::string::npos)
      << sent;

  const LoopResult other = RunOver(R"({"type":"note","x":)" + deep + "}\n", /*child_ready=*/true);
  EXPECT_EQ(other.end, LoopEnd::kProtocolError);
  EXPECT_EQ(other.message, "a bridge frame is too deeply nested: nested deeper than 128 levels");
}

// This process's peak resident set since the last ResetPeakRss, in bytes (VmHWM); -1 when the
// kernel does not say.
std::int64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      std::int64_t kib = -1;
      fields >> kib;
      return kib < 0 ? -1 : kib * 1024;
    }
  }
  return -1;
}
// "5" resets the peak RSS to the current RSS (proc(5), /proc/pid/clear_refs).
bool ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// A run that starts 256 calls of a tool answering 1 MB each and never reads an answer: the host
// holds its answers only up to the run's backlog budget (then no further handler starts), so
// neither what it keeps for the child nor its own RSS grows by the 256 MB of all the answers.
TEST(HostLoopTest, AnswersTheChildDoesNotReadAreBoundedByTheBacklogBudget) {
  Pipe from_child;
  Pipe to_child;
  std::string calls;
  for (int id = 1; id <= 256; ++id) {
    calls += R"({"type":"tool_call","id":)" + std::to_string(id) + R"(,"name":"big","kwargs":{}})" +
             "\n";
  }
  ASSERT_LT(calls.size(), 64u * 1024);
  ASSERT_EQ(write(from_child.write_fd, calls.data(), calls.size()),
            static_cast<ssize_t>(calls.size()));

  auto started = std::make_shared<std::atomic<int>>(0);
  HostTool tool;
  tool.name = "big";
  tool.handler = [started](const std::string&) {
    ++*started;
    return ToolResult::Success("\"" + std::string(1'000'000, 'x') + "\"");
  };
  const std::vector<HostTool> tools{tool};
  const ExecutionLimits limits;  // 1 MiB frames: a backlog budget of 4 MiB
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  const bool measured = ResetPeakRss();
  const std::int64_t rss_before = PeakRssBytes();
  // The "child" never reads: the run ends on its wall clock.
  const LoopResult result =
      loop.Run("pass", std::chrono::steady_clock::now() + 3s, /*child_ready=*/true);
  const std::int64_t rss_growth = PeakRssBytes() - rss_before;
  EXPECT_TRUE(Eventually([] { return ToolWorkers::Instance().Counts().busy == 0; }));

  EXPECT_EQ(result.end, LoopEnd::kTimeout) << result.message;
  EXPECT_EQ(result.tool_calls, 256);
  // 16 handlers at once, and new ones only while less than 4 MiB of answers wait unsent.
  EXPECT_LE(started->load(), 16 + 4) << "handlers kept starting for a child that reads nothing";
  const std::int64_t frame = limits.max_frame_bytes;
  EXPECT_LE(result.peak_unsent_bytes, 4 * frame + 16 * frame);
  if (measured && rss_before > 0) {
    std::printf("peak RSS growth of the host: %lld MiB (%d handlers ran)\n",
                static_cast<long long>(rss_growth >> 20), started->load());
    EXPECT_LT(rss_growth, 160LL << 20);
  } else {
    std::printf("RSS not measured: /proc/self/clear_refs or VmHWM unavailable\n");
  }
}

// Calls that wait for a handler hold their arguments in the host: past the backlog budget of
// them, a new call is refused with ToolBacklogExceeded, which the code can catch.
TEST(HostLoopTest, CallsPastTheBacklogBudgetAreRefusedWithToolBacklogExceeded) {
  Pipe from_child;
  Pipe to_child;
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  HostTool tool;
  tool.name = "slow";
  tool.handler = [released](const std::string&) {
    released.wait();
    return ToolResult::Success("null");
  };
  const std::vector<HostTool> tools{tool};
  const ExecutionLimits limits;
  // 16 calls run (and block), the rest wait with 300 kB of arguments each: the 4 MiB budget
  // holds 13 of them.
  std::thread writer([&] {
    const std::string arg(300'000, 'a');
    for (int id = 1; id <= 40; ++id) {
      const std::string call = R"({"type":"tool_call","id":)" + std::to_string(id) +
                               R"(,"name":"slow","kwargs":{"x":")" + arg + "\"}}\n";
      std::string_view rest = call;
      while (!rest.empty()) {
        const ssize_t n = write(from_child.write_fd, rest.data(), rest.size());
        if (n <= 0) return;
        rest.remove_prefix(static_cast<std::size_t>(n));
      }
    }
  });
  std::string sent;
  std::thread reader([&] {
    char buf[4096];
    while (sent.find("ToolBacklogExceeded") == std::string::npos) {
      const ssize_t n = read(to_child.read_fd, buf, sizeof buf);
      if (n <= 0) break;
      sent.append(buf, static_cast<std::size_t>(n));
    }
    release->set_value();
    const std::string complete = R"({"type":"complete","output_present":false})"
                                 "\n";
    writer.join();
    EXPECT_EQ(write(from_child.write_fd, complete.data(), complete.size()),
              static_cast<ssize_t>(complete.size()));
  });
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  const LoopResult r =
      loop.Run("pass", std::chrono::steady_clock::now() + 10s, /*child_ready=*/true);
  close(to_child.write_fd);  // the reader's EOF, should it still wait
  to_child.write_fd = -1;
  reader.join();
  EXPECT_EQ(r.end, LoopEnd::kComplete) << r.message;
  const std::size_t at = sent.find(R"("ok":false,"error_type":"ToolBacklogExceeded")");
  ASSERT_NE(at, std::string::npos) << sent.substr(0, 2000);
  EXPECT_NE(sent.find("read (await) the answers before making more calls", at), std::string::npos);
}

// A wake-up pipe made ahead (a pooled child's) is the one the loop waits on: a tool's answer
// reaches the child through it (were the loop polling another pipe, the answer would wait for the
// run's deadline), and the loop closes it once the run is over.
TEST(HostLoopTest, AWakeUpPipeMadeAheadCarriesTheAnswersAndIsClosedAfterTheRun) {
  Pipe from_child;
  Pipe to_child;
  ASSERT_TRUE(WriteToolCall(from_child, 1, "later"));
  std::string sent;
  std::thread child = ChildEndingAfter(R"("id":1,"ok":true)", to_child, from_child, sent);
  HostTool tool;
  tool.name = "later";
  tool.handler = [](const std::string&) {
    std::this_thread::sleep_for(100ms);  // the loop is in poll by now, waiting on the pipe
    return ToolResult::Success("7");
  };
  const std::vector<HostTool> tools{tool};
  const ExecutionLimits limits;
  StatusOr<PipeFds> made = MakeNonBlockingPipe();
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const int read_end = made->read.get(), write_end = made->write.get();
  RunExtras extras;
  extras.wake = &*made;
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  const auto start = std::chrono::steady_clock::now();
  const LoopResult r = loop.Run("pass", start + 30s, /*child_ready=*/true, extras);
  child.join();
  EXPECT_EQ(r.end, LoopEnd::kComplete) << r.message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_NE(sent.find(R"("id":1,"ok":true,"result":7)"), std::string::npos) << sent;
  EXPECT_FALSE(made->read || made->write);  // taken over
  // Closed once the handler's thread let go of the run's box (F_GETFD fails on a closed fd;
  // nothing else in this test opens one meanwhile).
  EXPECT_TRUE(Eventually(
      [&] { return fcntl(read_end, F_GETFD) == -1 && fcntl(write_end, F_GETFD) == -1; }));
}

}  // namespace
}  // namespace codeact::internal
