// HostLoop against an in-process "child": the test plays the child's side of the bridge pipes.
#include "bridge/host_loop.hpp"

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

#include "bridge/tool_workers.hpp"

namespace codeact::internal {
namespace {

using namespace std::chrono_literals;

struct Pipe {
  int read_fd = -1;
  int write_fd = -1;
  Pipe() {
    int fds[2];
    if (pipe(fds) == 0) {
      read_fd = fds[0];
      write_fd = fds[1];
    }
  }
  ~Pipe() {
    if (read_fd >= 0) close(read_fd);
    if (write_fd >= 0) close(write_fd);
  }
};

// A child can put hundreds of tool calls into one write; starting their handlers is not free,
// so the loop must look at the wall clock between them, not only between reads.
TEST(HostLoopTest, TheWallClockBoundsABatchOfToolCallsReadInOneRead) {
  Pipe from_child;
  Pipe to_child;
  ASSERT_GE(from_child.read_fd, 0);
  ASSERT_GE(to_child.read_fd, 0);
  std::string batch;
  for (int id = 1; id <= 1000; ++id) {
    batch += R"({"type":"tool_call","id":)" + std::to_string(id) +
             R"(,"name":"wait","kwargs":{}})" + "\n";
  }
  ASSERT_LT(batch.size(), 64u * 1024);  // one pipe buffer: the loop gets it in one read
  ASSERT_EQ(write(from_child.write_fd, batch.data(), batch.size()),
            static_cast<ssize_t>(batch.size()));

  // Handlers that block until the test ends, so every call starts a worker thread.
  auto release = std::make_shared<std::atomic<bool>>(false);
  HostTool tool;
  tool.name = "wait";
  tool.handler = [release](const std::string&) {
    while (!release->load()) std::this_thread::sleep_for(1ms);
    return ToolResult::Success("null");
  };
  const std::vector<HostTool> tools{tool};
  const ExecutionLimits limits;  // 256 calls; the batch is far past the budget
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);

  const LoopResult result = loop.Run("pass", std::chrono::steady_clock::now() + 1ms);
  release->store(true);

  EXPECT_EQ(result.end, LoopEnd::kTimeout) << result.message;
  EXPECT_LT(result.tool_calls, limits.max_tool_calls);
}

// Runs the loop over frames the "child" wrote (and then closed its end of); `sent`, when given,
// gets what the loop wrote to the child (the request).
LoopResult RunOverFrames(const std::string& frames, bool child_ready, const RunExtras& extras,
                         std::string* sent = nullptr) {
  Pipe from_child;
  Pipe to_child;
  EXPECT_EQ(write(from_child.write_fd, frames.data(), frames.size()),
            static_cast<ssize_t>(frames.size()));
  close(from_child.write_fd);
  from_child.write_fd = -1;
  const std::vector<HostTool> tools;
  const ExecutionLimits limits;
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  const LoopResult result =
      loop.Run("pass", std::chrono::steady_clock::now() + 10s, child_ready, extras);
  if (sent != nullptr) {
    char buf[4096];
    const ssize_t n = read(to_child.read_fd, buf, sizeof buf);
    *sent = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  }
  return result;
}

LoopResult RunOver(const std::string& frames, bool child_ready) {
  return RunOverFrames(frames, child_ready, {});
}

// Only the sandbox launcher writes before the runner's ready frame; after it, a setup_error frame
// can only be the code's own forgery and changes nothing.
TEST(HostLoopTest, ASetupErrorCountsOnlyBeforeTheReadyFrame) {
  const std::string setup =
      R"({"type":"setup_error","step":"mount /proc","errno":1,"message":"sandbox setup: mount /proc failed"})";
  const std::string ready = R"({"type":"ready","python":[3,11],"pid":2})";
  const std::string complete = R"({"type":"complete","output_present":false})";

  const LoopResult before = RunOver(setup + "\n", /*child_ready=*/false);
  EXPECT_EQ(before.end, LoopEnd::kSetupError);
  EXPECT_EQ(before.message, "sandbox setup: mount /proc failed");

  EXPECT_EQ(RunOver(ready + "\n" + setup + "\n" + complete + "\n", false).end, LoopEnd::kComplete);
  EXPECT_EQ(RunOver(setup + "\n" + complete + "\n", /*child_ready=*/true).end, LoopEnd::kComplete);
}

// Runs the loop as for a runner (its bridge closes with the run) over what the "child" wrote.
LoopResult RunOverRunner(const std::string& frames) {
  return RunOverFrames(frames, /*child_ready=*/true, {nullptr, /*bridge_closes_after_run=*/true});
}

// The runner's terminal frame is the last thing on its bridge: a second one (the code forged the
// first), a tool call or even a partial line after it ends the run as a protocol error.
TEST(HostLoopTest, AnythingAfterTheTerminalFrameIsAProtocolError) {
  const std::string forged = R"({"type":"complete","output_present":true,"output":"forged"})"
                             "\n";
  const std::string real = R"({"type":"complete","output_present":true,"output":"real"})"
                           "\n";
  const LoopResult twice = RunOverRunner(forged + real);
  EXPECT_EQ(twice.end, LoopEnd::kProtocolError);
  EXPECT_NE(twice.message.find("after its terminal frame"), std::string::npos) << twice.message;
  EXPECT_FALSE(twice.output_present);
  EXPECT_EQ(RunOverRunner(real + R"({"type":"tool_call","id":1,"name":"x"})"
                                 "\n")
                .end,
            LoopEnd::kProtocolError);
  EXPECT_EQ(RunOverRunner(real + R"({"type":)").end, LoopEnd::kProtocolError);
  const LoopResult alone = RunOverRunner(real);
  EXPECT_EQ(alone.end, LoopEnd::kComplete);
  EXPECT_EQ(alone.output_json, "\"real\"");
  // A worker that serves run after run is not held to it.
  EXPECT_EQ(RunOver(forged + real, /*child_ready=*/true).end, LoopEnd::kComplete);
}

// The bridge still open after the terminal frame (a process the code forked holds it): the run
// ends with its result after a short grace, not at the wall clock.
TEST(HostLoopTest, ABridgeLeftOpenAfterTheTerminalFrameIsNotWaitedForLong) {
  Pipe from_child;
  Pipe to_child;
  const std::string real =
      R"({"type":"error","error_type":"ValueError","message":"m","traceback":"t"})"
      "\n";
  ASSERT_EQ(write(from_child.write_fd, real.data(), real.size()),
            static_cast<ssize_t>(real.size()));
  const std::vector<HostTool> tools;
  const ExecutionLimits limits;
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  const auto start = std::chrono::steady_clock::now();
  const LoopResult r = loop.Run("pass", start + 10s, true, {nullptr, true});
  EXPECT_EQ(r.end, LoopEnd::kUserError);
  EXPECT_EQ(r.error.type, "ValueError");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

// A runner that could not arm its guard answers the request with guard_error: a setup error,
// nothing ran. Anywhere else it is the code's own forgery and changes nothing.
TEST(HostLoopTest, AGuardErrorAnswersTheRequestAsASetupError) {
  const std::string ready = R"({"type":"ready","python":[3,11],"pid":2})"
                            "\n";
  const std::string guard =
      R"({"type":"guard_error","message":"codeact guard: landlock_restrict_self failed: x"})"
      "\n";
  const std::string call = R"({"type":"tool_call","id":1,"name":"nope","kwargs":{}})"
                           "\n";
  const std::string complete = R"({"type":"complete","output_present":false})"
                               "\n";
  const RuntimeGuardSpec spec;
  const RunExtras guarded{&spec};
  const LoopResult cold = RunOverFrames(ready + guard, /*child_ready=*/false, guarded);
  EXPECT_EQ(cold.end, LoopEnd::kSetupError);
  EXPECT_EQ(cold.message, "codeact guard: landlock_restrict_self failed: x");
  EXPECT_EQ(RunOverFrames(guard, /*child_ready=*/true, guarded).end, LoopEnd::kSetupError);
}

// The runner sends guard_error only as its first answer to a request that carries a guard; one
// after other frames, or to a request without a guard, is the code's forgery: the run ends as a
// protocol error (a BridgeError), not as the setup error it claims, nor is it ignored.
TEST(HostLoopTest, AGuardErrorTheRunnerNeverSendsThereIsAProtocolError) {
  const std::string guard = R"({"type":"guard_error","message":"codeact guard: forged"})"
                            "\n";
  const std::string call = R"({"type":"tool_call","id":1,"name":"nope","kwargs":{}})"
                           "\n";
  const std::string complete = R"({"type":"complete","output_present":true,"output":"x"})"
                               "\n";
  const RuntimeGuardSpec spec;
  const LoopResult late =
      RunOverFrames(call + guard + complete, /*child_ready=*/true, RunExtras{&spec});
  EXPECT_EQ(late.end, LoopEnd::kProtocolError);
  EXPECT_EQ(late.message,
            "the child sent a guard_error frame after other frames: the runner sends one only as "
            "its first answer to a guarded request, so the code forged it");
  EXPECT_FALSE(late.output_present);
  const LoopResult unguarded = RunOver(guard + complete, /*child_ready=*/true);
  EXPECT_EQ(unguarded.end, LoopEnd::kProtocolError);
  EXPECT_NE(unguarded.message.find("to a request without a runtime guard"), std::string::npos)
      << unguarded.message;
}

// max_output_bytes is the host's to hold, not only the runner's: a complete frame whose output
// is over it (the runner would have sent a limit frame) ends the run as a protocol error. The
// size is the output's text as the child sent it, whatever it writes under kOutputTextBytes.
TEST(HostLoopTest, ACompleteFrameWithAnOutputOverTheCapIsAProtocolError) {
  ExecutionLimits limits;
  limits.max_output_bytes = 100;
  const auto run = [&](const std::string& frame) {
    Pipe from_child;
    Pipe to_child;
    // Larger than a pipe's buffer: written while the loop reads.
    std::thread child([&] {
      std::string_view rest = frame;
      while (!rest.empty()) {
        const ssize_t n = write(from_child.write_fd, rest.data(), rest.size());
        if (n <= 0) break;
        rest.remove_prefix(static_cast<std::size_t>(n));
      }
      close(from_child.write_fd);
      from_child.write_fd = -1;
    });
    const std::vector<HostTool> tools;
    HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
    const LoopResult r =
        loop.Run("pass", std::chrono::steady_clock::now() + 10s, /*child_ready=*/true);
    child.join();
    return r;
  };
  const std::string big = "\"" + std::string(500'000, 'x') + "\"";
  const LoopResult forged =
      run(R"({"type":"complete","output_present":true,"output":)" + big + "}\n");
  EXPECT_EQ(forged.end, LoopEnd::kProtocolError);
  EXPECT_EQ(forged.message,
            "the child's complete frame carries an output of 500002 bytes, over the limit of 100 "
            "bytes (max_output_bytes): a frame the runner never sends, forged by the code");
  EXPECT_FALSE(forged.output_present);
  EXPECT_EQ(run(R"({"type":"complete","output_present":true,"output_text_bytes":1,"output":)" +
                big + "}\n")
                .end,
            LoopEnd::kProtocolError);
  // 100 bytes of output text is within the cap.
  const std::string fits = "\"" + std::string(98, 'y') + "\"";
  const LoopResult ok = run(R"({"type":"complete","output_present":true,"output":)" + fits + "}\n");
  EXPECT_EQ(ok.end, LoopEnd::kComplete) << ok.message;
  EXPECT_EQ(ok.output_json, fits);
}

// Runs the loop as for a runner that validates the code itself (RunExtras::validate).
LoopResult RunOverValidatingChild(const std::string& frames, std::string* sent = nullptr) {
  ValidationPolicy policy;
  policy.extra_blocked_imports = {"json"};
  policy.tool_names = {"lookup"};
  const RuntimeGuardSpec guard;
  return RunOverFrames(frames, /*child_ready=*/true,
                       {&guard, /*bridge_closes_after_run=*/true, &policy}, sent);
}

// The child's verdict is its first frame after the request: a rejection ends the run with the
// violations; a pass lets the run go on (and a guard_error still answers the request); anything
// else first leaves unknown whether code ran, which ends the run as a protocol error, as does a
// malformed verdict. A verdict the code forges later changes nothing.
TEST(HostLoopTest, AValidatingChildAnswersWithItsVerdictFirst) {
  const std::string ok = R"({"type":"validated","ok":true})"
                         "\n";
  const std::string rejected =
      R"({"type":"validated","ok":false,"violations":[{"line":2,"col":3,"rule":"import-blocked",)"
      R"("message":"import of json is not allowed","hint":"use math"}],"violations_dropped":4})"
      "\n";
  const std::string complete = R"({"type":"complete","output_present":false})"
                               "\n";
  const std::string guard = R"({"type":"guard_error","message":"codeact guard: x"})"
                            "\n";

  std::string sent;
  const LoopResult no = RunOverValidatingChild(rejected, &sent);
  EXPECT_EQ(no.end, LoopEnd::kRejected);
  ASSERT_EQ(no.violations.size(), 1u);
  EXPECT_EQ(no.violations[0].line, 2);
  EXPECT_EQ(no.violations[0].col, 3);
  EXPECT_EQ(no.violations[0].rule, "import-blocked");
  EXPECT_EQ(no.violations[0].message, "import of json is not allowed");
  EXPECT_EQ(no.violations[0].hint, "use math");
  EXPECT_EQ(no.message, "4 violations dropped: they did not fit in a bridge frame");
  EXPECT_NE(sent.find(R"("validate":{)"), std::string::npos) << sent;
  EXPECT_NE(sent.find(R"("extra_blocked_imports":["json"])"), std::string::npos) << sent;
  EXPECT_NE(sent.find(R"("tool_names":["lookup"])"), std::string::npos) << sent;

  EXPECT_EQ(RunOverValidatingChild(ok + complete).end, LoopEnd::kComplete);
  EXPECT_EQ(RunOverValidatingChild(ok + guard).end, LoopEnd::kSetupError);
  EXPECT_EQ(RunOverValidatingChild(ok + rejected + complete).end, LoopEnd::kComplete);

  const LoopResult skipped = RunOverValidatingChild(complete);
  EXPECT_EQ(skipped.end, LoopEnd::kProtocolError);
  EXPECT_NE(skipped.message.find("without the verdict"), std::string::npos) << skipped.message;
  EXPECT_EQ(RunOverValidatingChild(guard).end, LoopEnd::kProtocolError);
  for (
      const char* malformed :
      {R"({"type":"validated","ok":true,"violations":[{"line":1,"col":0,"rule":"r","message":"m","hint":"h"}]})",
       R"({"type":"validated","ok":false})", R"({"type":"validated","ok":false,"violations":[]})",
       R"({"type":"validated","ok":false,"violations":[{"line":"1","col":0,"rule":"r","message":"m","hint":"h"}]})",
       R"({"type":"validated","ok":false,"violations":[{"line":1,"col":0,"rule":"r"}]})",
       R"({"type":"validated","violations":[]})"}) {
    const LoopResult r = RunOverValidatingChild(std::string(malformed) + "\n" + complete);
    EXPECT_EQ(r.end, LoopEnd::kProtocolError) << malformed;
  }
}

TEST(HostLoopTest, TheRequestCarriesTheGuardAndAPooledChildItsSystemPartAhead) {
  RuntimeGuardSpec spec;
  spec.exec = {"/usr"};
  spec.write = {"/work", "/dev/null"};
  spec.tmp = "/scratch/tmp";
  spec.bridge_fds = {3, 4};
  spec.imports = {"math", "xml.*", "!xml.dom"};
  Pipe from_child;
  Pipe to_child;
  ASSERT_TRUE(SendGuardFrame(to_child.write_fd, spec).ok());
  const std::string complete = R"({"type":"complete","output_present":false})"
                               "\n";
  ASSERT_EQ(write(from_child.write_fd, complete.data(), complete.size()),
            static_cast<ssize_t>(complete.size()));
  close(from_child.write_fd);
  from_child.write_fd = -1;
  const std::vector<HostTool> tools;
  const ExecutionLimits limits;
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  ASSERT_EQ(loop.Run("pass", std::chrono::steady_clock::now() + 10s, true, {&spec, true}).end,
            LoopEnd::kComplete);
  char buf[4096];
  const ssize_t n = read(to_child.read_fd, buf, sizeof buf);
  ASSERT_GT(n, 0);
  const std::string sent(buf, static_cast<std::size_t>(n));
  const std::string system =
      R"("exec":["/usr"],"read":[],"write":["/work","/dev/null"],"bridge_fds":[3,4],"tmp":"/scratch/tmp")";
  EXPECT_EQ(sent.substr(0, sent.find('\n') + 1), "{" + system +
                                                     R"(,"type":"guard"})"
                                                     "\n");
  EXPECT_NE(sent.find(R"("guard":{)" + system + R"(,"imports":["math","xml.*","!xml.dom"]})"),
            std::string::npos)
      << sent;
}

TEST(HostLoopTest, WaitForReadyFrameReportsASetupError) {
  Pipe from_child;
  const std::string setup =
      R"({"type":"setup_error","step":"pivot_root","errno":22,"message":"sandbox setup: pivot_root failed: Invalid argument"})"
      "\n";
  ASSERT_EQ(write(from_child.write_fd, setup.data(), setup.size()),
            static_cast<ssize_t>(setup.size()));
  const Status s = WaitForReadyFrame(from_child.read_fd, 5s);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "sandbox setup: pivot_root failed: Invalid argument");
}

// Waits until `done` holds, up to a generous deadline.
template <typename Pred>
bool Eventually(Pred done, std::chrono::seconds deadline = 10s) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(HostLoopTest, ACancelledRequestEndsTheLoopAtOnceWithItsReason) {
  Pipe from_child;  // the "child" stays silent: only the cancellation can end the loop early
  Pipe to_child;
  const std::vector<HostTool> tools;
  const ExecutionLimits limits;
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  CancellationSource cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(50ms);
    cancel.Cancel("the server is shutting down");
  });
  const auto start = std::chrono::steady_clock::now();
  const LoopResult result = loop.Run("pass", start + 60s, /*child_ready=*/true, {}, cancel.token());
  canceller.join();
  EXPECT_EQ(result.end, LoopEnd::kCancelled);
  EXPECT_EQ(result.message, "the server is shutting down");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

// However a run ends, its tool calls learn it through their context and stop; the worker that
// ran the call is free again.
TEST(HostLoopTest, ToolCallsAreCancelledWhenTheRunEnds) {
  Pipe from_child;
  Pipe to_child;
  const std::string call = R"({"type":"tool_call","id":1,"name":"hang","kwargs":{}})"
                           "\n";
  ASSERT_EQ(write(from_child.write_fd, call.data(), call.size()),
            static_cast<ssize_t>(call.size()));

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
  // The "child": reads the answer, then ends its run.
  std::string sent;
  std::thread child([&] {
    char buf[4096];
    while (sent.find("ToolArgumentsTooDeep") == std::string::npos) {
      const ssize_t n = read(to_child.read_fd, buf, sizeof buf);
      if (n <= 0) return;
      sent.append(buf, static_cast<std::size_t>(n));
    }
    const std::string complete = R"({"type":"complete","output_present":false})"
                                 "\n";
    EXPECT_EQ(write(from_child.write_fd, complete.data(), complete.size()),
              static_cast<ssize_t>(complete.size()));
  });
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

}  // namespace
}  // namespace codeact::internal
