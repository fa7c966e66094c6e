// HostLoop against an in-process "child": the test plays the child's side of the bridge pipes.
#include "bridge/host_loop.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "bridge/tool_workers.hpp"
#include "unit/bridge/host_loop_fixture.hpp"

namespace codeact::internal {
namespace {

using namespace std::chrono_literals;
using namespace host_loop_test;  // NOLINT(build/namespaces): the shared helpers

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

  // Run returned although every handler still blocks: the wall clock ended it. How many calls it
  // started by then depends on how fast this host starts their handlers (on a quiet host all 256
  // of the budget fit in 1 ms), so only the budget is asserted.
  EXPECT_EQ(result.end, LoopEnd::kTimeout) << result.message;
  EXPECT_LE(result.tool_calls, limits.max_tool_calls);
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

// Runs the loop with a gate (RunExtras::gate) over a "child" that reads the request, then waits
// for the verdict frame and completes only after one. `child_got` is all it read;
// `request_first` whether the request was in the child when the gate was called. `end`: what the
// gate returns.
LoopResult RunWithGate(const std::optional<LoopResult>& end, std::string& child_got,
                       bool& request_first) {
  Pipe from_child;
  Pipe to_child;
  std::atomic<bool> has_request{false};
  std::thread child([&] {
    char buf[4096];
    ssize_t n;
    while ((n = read(to_child.read_fd, buf, sizeof buf)) > 0) {
      child_got.append(buf, static_cast<std::size_t>(n));
      if (child_got.find('\n') != std::string::npos) has_request = true;
      if (child_got.find(R"({"type":"verdict","ok":true})") != std::string::npos) {
        const std::string complete = R"({"type":"complete","output_present":false})"
                                     "\n";
        EXPECT_EQ(write(from_child.write_fd, complete.data(), complete.size()),
                  static_cast<ssize_t>(complete.size()));
        break;
      }
    }
    close(from_child.write_fd);
    from_child.write_fd = -1;
  });
  int calls = 0;
  const std::function<std::optional<LoopResult>()> gate = [&] {
    ++calls;
    request_first = Eventually([&] { return has_request.load(); }, 5s);
    return end;
  };
  const std::vector<HostTool> tools;
  const ExecutionLimits limits;
  HostLoop loop({-1, -1, to_child.write_fd, from_child.read_fd}, tools, limits);
  const LoopResult result =
      loop.Run("print(1)", std::chrono::steady_clock::now() + 10s, /*child_ready=*/true,
               {nullptr, /*bridge_closes_after_run=*/true, nullptr, &gate});
  close(to_child.write_fd);  // a refused run's child reads EOF: what the executor's kill does
  to_child.write_fd = -1;
  child.join();
  EXPECT_EQ(calls, 1);
  return result;
}

// The host prepares and validates while the child compiles: the request says "await_verdict",
// the gate is called once the request is in the child, and the child gets the "verdict" frame
// only when the gate lets the code run. Otherwise what the gate returns ends the run (a
// rejection with its violations, a setup error with its message), and the child gets nothing
// more.
TEST(HostLoopTest, TheGateIsPassedAfterTheRequestAndTheVerdictSentOnlyThen) {
  std::string got;
  bool request_first = false;
  const LoopResult passed = RunWithGate(std::nullopt, got, request_first);
  EXPECT_EQ(passed.end, LoopEnd::kComplete) << passed.message;
  EXPECT_TRUE(request_first);
  const std::size_t request_end = got.find('\n');
  ASSERT_NE(request_end, std::string::npos) << got;
  EXPECT_NE(got.substr(0, request_end).find(R"("await_verdict":true)"), std::string::npos) << got;
  EXPECT_EQ(got.substr(request_end + 1), R"({"type":"verdict","ok":true})"
                                         "\n");

  LoopResult rejection;
  rejection.end = LoopEnd::kRejected;
  rejection.violations.push_back({1, 0, "import-blocked", "no", "use math"});
  LoopResult setup;
  setup.end = LoopEnd::kSetupError;
  setup.message = "cannot measure the mount";
  for (const LoopResult& end : {rejection, setup}) {
    got.clear();
    request_first = false;
    const LoopResult refused = RunWithGate(end, got, request_first);
    EXPECT_EQ(refused.end, end.end);
    EXPECT_EQ(refused.message, end.message);
    EXPECT_EQ(refused.violations.size(), end.violations.size());
    EXPECT_TRUE(request_first);
    EXPECT_EQ(got.find(R"("type":"verdict")"), std::string::npos) << got;
    EXPECT_EQ(got.find('\n'), got.size() - 1) << "only the request: " << got;
  }
}

// What the gate returns wins over whatever the child said meanwhile, as the host's steps before
// the run would have: here a complete frame the child wrote before the gate was called.
TEST(HostLoopTest, TheGatesEndWinsOverWhatTheChildSentMeanwhile) {
  const std::function<std::optional<LoopResult>()> reject = [] {
    LoopResult end;
    end.end = LoopEnd::kRejected;
    end.violations.push_back({1, 0, "call-blocked", "no", ""});
    return std::optional<LoopResult>(end);
  };
  const LoopResult r = RunOverFrames(R"({"type":"complete","output_present":false})"
                                     "\n",
                                     /*child_ready=*/true, {nullptr, true, nullptr, &reject});
  EXPECT_EQ(r.end, LoopEnd::kRejected);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].rule, "call-blocked");
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
  ASSERT_TRUE(SendGuardFrame(to_child.write_fd, spec, /*with_imports=*/false).ok());
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

// A child whose guard frame had the imports too (protocol_test: EncodeGuard with them) gets a
// request that names it, unless it validates the code itself (its imports are then its own).
TEST(HostLoopTest, ARequestNamesTheGuardFrameSentAheadWithItsImports) {
  RuntimeGuardSpec spec;
  spec.exec = {"/usr"};
  spec.write = {"/work"};
  spec.bridge_fds = {3, 4};
  spec.imports = {"math", "!socket"};
  const ValidationPolicy policy;
  for (const bool validates : {false, true}) {
    SCOPED_TRACE(validates ? "the child validates" : "the host validates");
    const std::string frames = std::string(validates ? R"({"type":"validated","ok":true})"
                                                       "\n"
                                                     : "") +
                               R"({"type":"complete","output_present":false})"
                               "\n";
    RunExtras extras{&spec, true, validates ? &policy : nullptr};
    extras.guard_as_armed = true;
    std::string request;
    ASSERT_EQ(RunOverFrames(frames, /*child_ready=*/true, extras, &request).end,
              LoopEnd::kComplete);
    if (validates) {
      EXPECT_NE(request.find(R"("guard":{"exec":["/usr"],)"), std::string::npos) << request;
      EXPECT_EQ(request.find(R"("guard":"armed")"), std::string::npos) << request;
    } else {
      EXPECT_NE(request.find(R"("guard":"armed")"), std::string::npos) << request;
      EXPECT_EQ(request.find("imports"), std::string::npos) << request;
    }
  }
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

}  // namespace
}  // namespace codeact::internal
