// Tool calls through the bridge against a real child.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "codeact/executor.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
using testing::LocalExecutor;

HostTool Add() {
  return {"add", "Add two numbers",
          R"({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}})", false,
          [](const std::string& kwargs) {
            const bj::value v = bj::parse(kwargs);
            return ToolResult::Success(bj::serialize(
                bj::value(v.at("a").to_number<double>() + v.at("b").to_number<double>())));
          }};
}

HostTool Failing() {
  return {"fail", "Always fails", R"({"type":"object"})", false, [](const std::string&) {
            return ToolResult::Failure("PermissionError", "not allowed today");
          }};
}

HostTool Throwing() {
  return {"boom", "Throws", R"({"type":"object"})", false,
          [](const std::string&) -> ToolResult { throw std::runtime_error("handler exploded"); }};
}

HostTool Hanging() {
  return {"hang", "Never returns in time", R"({"type":"object"})", false, [](const std::string&) {
            std::this_thread::sleep_for(std::chrono::seconds(5));
            return ToolResult::Success("null");
          }};
}

RunSnapshot WithTools(std::vector<HostTool> tools, ExecutionLimits limits = {}) {
  RunSnapshot s;
  s.tools = std::move(tools);
  s.limits = limits;
  return s;
}

TEST(ToolBridgeTest, RoundTripInBothForms) {
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/round_trip_in_both_forms")}, WithTools({Add()}));
  EXPECT_EQ(r.outcome, Outcome::kOk)
      << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
  EXPECT_EQ(r.stdout_text, "3.0 13.0\n");
  EXPECT_EQ(r.output_json, "13.0");
  EXPECT_EQ(r.tool_calls, 2);
}

TEST(ToolBridgeTest, UnknownToolIsACatchableError) {
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/unknown_tool_is_a_catchable_error")}, WithTools({Add()}));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "UnknownTool\n");
}

TEST(ToolBridgeTest, FailingAndThrowingToolsCarryTypeAndMessage) {
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/failing_and_throwing_tools_carry_type_and_message")},
      WithTools({Failing(), Throwing()}));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "PermissionError | not allowed today\nToolFailed | handler exploded\n");
}

TEST(ToolBridgeTest, UncaughtToolErrorIsAUserError) {
  const ExecutionResult r =
      LocalExecutor()->Execute({"await call_tool('fail')\n"}, WithTools({Failing()}));
  EXPECT_EQ(r.outcome, Outcome::kError);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_NE(r.error->message.find("not allowed today"), std::string::npos) << r.error->message;
}

TEST(ToolBridgeTest, HangingToolIsBoundedByTheWallClock) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 700;
  const auto start = std::chrono::steady_clock::now();
  const ExecutionResult r =
      LocalExecutor()->Execute({"await call_tool('hang')\n"}, WithTools({Hanging()}, limits));
  EXPECT_EQ(r.outcome, Outcome::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
}

TEST(ToolBridgeTest, GatherOfManyCalls) {
  const ExecutionResult r = LocalExecutor()->Execute(
      {"import asyncio\n"
       "results = await asyncio.gather(*(add(a=i, b=i) for i in range(50)))\n"
       "sum(results)\n"},
      WithTools({Add()}));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(bj::parse(r.output_json).to_number<double>(), 2450.0);
  EXPECT_EQ(r.tool_calls, 50);
}

// A call made while another task has work to do goes through the event loop, so the other task
// runs meanwhile (`during`); a call awaited by the only task reads its answer directly (the fast
// path). Both give the same results, also mixed in one run.
TEST(ToolBridgeTest, CallsAloneAndBesideOtherTasksBothWork) {
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/calls_alone_and_beside_other_tasks_both_work")},
      WithTools({Add()}));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "3.0 True [0, 1, 2] [0.0, 1.0, 2.0, 3.0, 4.0]\n");
  EXPECT_EQ(bj::parse(r.output_json), bj::parse("[3.0,[0.0,1.0,2.0,3.0,4.0],20.0]"));
  EXPECT_EQ(r.tool_calls, 7);
}

TEST(ToolBridgeTest, BudgetExceeded) {
  ExecutionLimits limits;
  limits.max_tool_calls = 3;
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/budget_exceeded")}, WithTools({Add()}, limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text.substr(0, 2), "3 ");
  EXPECT_LE(r.tool_calls, 3);
}

TEST(ToolBridgeTest, OversizedArgumentFrameIsRefused) {
  ExecutionLimits limits;
  limits.max_frame_bytes = 64 * 1024;
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/oversized_argument_frame_is_refused")},
      WithTools({Add()}, limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "refused\n");
  EXPECT_EQ(r.tool_calls, 0);
}

TEST(ToolBridgeTest, OversizedToolResultIsAnErrorNotACrash) {
  ExecutionLimits limits;
  limits.max_frame_bytes = 64 * 1024;
  HostTool big{"big", "", R"({"type":"object"})", false, [](const std::string&) {
                 return ToolResult::Success("\"" + std::string(200000, 'z') + "\"");
               }};
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/oversized_tool_result_is_an_error_not_a_crash")},
      WithTools({big}, limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "ToolResultTooLarge\n");
}

TEST(ToolBridgeTest, ToolGetsTheKwargsAsJson) {
  std::string seen;
  std::mutex mu;
  HostTool echo{"echo", "", R"({"type":"object"})", false, [&](const std::string& kwargs) {
                  std::lock_guard lock(mu);
                  seen = kwargs;
                  return ToolResult::Success(kwargs);
                }};
  const ExecutionResult r = LocalExecutor()->Execute(
      {"await echo(text='héllo', n=[1, 2], d={'k': None})\n"}, WithTools({echo}));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(bj::parse(seen), bj::parse(R"({"text":"héllo","n":[1,2],"d":{"k":null}})"));
  EXPECT_EQ(bj::parse(r.output_json), bj::parse(seen));
}

}  // namespace
}  // namespace codeact

namespace codeact {
namespace {

TEST(ToolBridgeTest, AChildThatClosedItsBridgeCannotKillTheHostWithSigpipe) {
  ExecutionLimits limits;
  limits.wall_timeout_ms = 1500;
  // The answer to this call is written into a pipe nobody reads any more: without SIGPIPE
  // protection this test process would die here.
  HostTool slow{"slow", "", R"({"type":"object"})", false, [](const std::string&) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(300));
                  return ToolResult::Success("1");
                }};
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program(
          "tool_bridge/a_child_that_closed_its_bridge_cannot_kill_the_host_with_sigpipe")},
      WithTools({slow}, limits));
  EXPECT_EQ(r.outcome, Outcome::kTimeout) << r.message << r.stderr_text;
  EXPECT_EQ(r.tool_calls, 1);
}

}  // namespace
}  // namespace codeact

namespace codeact {
namespace {

TEST(ToolBridgeTest, AFloodOfCallsPastTheBudgetEndsTheRun) {
  ExecutionLimits limits;
  limits.max_tool_calls = 3;
  limits.wall_timeout_ms = 10'000;
  // Forged frames straight onto the bridge: the runner's own budget check is bypassed.
  const auto start = std::chrono::steady_clock::now();
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/a_flood_of_calls_past_the_budget_ends_the_run")},
      WithTools({Add()}, limits));
  EXPECT_EQ(r.outcome, Outcome::kError) << r.message;
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "BridgeError");
  EXPECT_NE(r.error->message.find("kept calling tools"), std::string::npos) << r.error->message;
  EXPECT_EQ(r.tool_calls, 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(5000));
}

}  // namespace
}  // namespace codeact

namespace codeact {
namespace {

TEST(ToolBridgeTest, ConcurrentHandlersOfOneRunAreBounded) {
  std::atomic<int> now{0}, peak{0};
  HostTool slow{"slow", "", R"({"type":"object"})", false, [&](const std::string&) {
                  const int n = ++now;
                  int p = peak.load();
                  while (n > p && !peak.compare_exchange_weak(p, n)) {
                  }
                  std::this_thread::sleep_for(std::chrono::milliseconds(20));
                  --now;
                  return ToolResult::Success("1");
                }};
  const ExecutionResult r = LocalExecutor()->Execute(
      {"import asyncio\nsum(await asyncio.gather(*(slow() for _ in range(64))))\n"},
      WithTools({slow}));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.output_json, "64");
  EXPECT_GT(peak.load(), 1);   // they do run concurrently ...
  EXPECT_LE(peak.load(), 16);  // ... but not all at once
}

// The bridge enforces approval on every call: a tool still marked requires_approval in the
// run's snapshot (the provider clears the mark for an approved run) is refused, however the
// code reached it, and its handler never runs.
TEST(ToolBridgeTest, AGatedToolOfARunThatWasNotApprovedIsAToolError) {
  std::atomic<int> calls = 0;
  HostTool gated = Add();
  gated.name = "refund";
  gated.requires_approval = true;
  gated.handler = [&calls](const std::string&) {
    ++calls;
    return ToolResult::Success("1");
  };
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program("tool_bridge/a_gated_tool_of_a_run_that_was_not_approved_is_a_tool_error")},
      WithTools({Add(), gated}));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("ApprovalRequired | the tool \"refund\" needs approval, and this "
                               "run was not approved"),
            std::string::npos)
      << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("\n3.0\n"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(calls.load(), 0);
}

// Arguments are checked against the declared schema before the handler runs (valijson, draft 7):
// add(a="x", b="y") no longer returns "xy".
TEST(ToolBridgeTest, ArgumentsThatDoNotMatchTheSchemaAreAToolErrorNamingTheField) {
  std::atomic<int> calls = 0;
  HostTool add = Add();
  add.parameters_schema =
      R"({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},)"
      R"("opts":{"type":"object","properties":{"round":{"type":"integer","minimum":0}}}},)"
      R"("required":["a","b"],"additionalProperties":false})";
  auto inner = add.handler;
  add.handler = [&calls, inner](const std::string& kwargs) {
    ++calls;
    return inner(kwargs);
  };
  const ExecutionResult r = LocalExecutor()->Execute(
      {testing::Program(
          "tool_bridge/arguments_that_do_not_match_the_schema_are_a_tool_error_naming_the_field")},
      WithTools({add}));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  const std::string& out = r.stdout_text;
  EXPECT_NE(out.find("ToolArgumentsInvalid | add: argument \"a\": "), std::string::npos) << out;
  EXPECT_NE(out.find("'b'"), std::string::npos) << "the missing field is named: " << out;
  EXPECT_NE(out.find("'c'"), std::string::npos) << "the extra field is named: " << out;
  EXPECT_NE(out.find("argument \"opts.round\""), std::string::npos) << out;
  EXPECT_NE(out.find("\n3.0\n"), std::string::npos) << out;
  EXPECT_EQ(calls.load(), 1) << "only the valid call reached the handler";
}

// What the code writes on the bridge fds itself (no validator here: the executor runs what it is
// given) ends its run as a BridgeError where the runner would never send it: an output over
// max_output_bytes in a complete frame (the host holds the cap, not only the runner), and a
// guard_error after other frames. At both levels.
TEST(ToolBridgeTest, FramesForgedOnTheBridgeEndTheRunAsABridgeError) {
  struct Case {
    const char* fixture;
    const char* message_part;
  };
  const Case cases[] = {
      {"forge_complete.py",
       "the child's complete frame carries an output of 500002 bytes, over the limit of 100 "
       "bytes"},
      {"forge_guard_error.py", "the child sent a guard_error frame after other frames"},
  };
  ExecutionLimits limits;
  limits.max_output_bytes = 100;
  for (IsolationLevel level : {IsolationLevel::kProcess, IsolationLevel::kNamespaces}) {
    for (const Case& c : cases) {
      const ExecutionResult r =
          LocalExecutor(level)->Execute({testing::Fixture(c.fixture)}, WithTools({}, limits));
      if (level == IsolationLevel::kNamespaces && r.outcome == Outcome::kSetupError) {
        std::printf("namespaces level not run here: %s\n", r.message.c_str());
        break;
      }
      EXPECT_EQ(OutcomeName(r.outcome), OutcomeName(Outcome::kError))
          << c.fixture << " at " << IsolationName(level) << ": " << r.message;
      ASSERT_TRUE(r.error.has_value()) << c.fixture;
      EXPECT_EQ(r.error->type, "BridgeError") << c.fixture;
      EXPECT_NE(r.error->message.find(c.message_part), std::string::npos)
          << c.fixture << ": " << r.error->message;
      EXPECT_FALSE(r.output_present) << c.fixture;
    }
  }
}

}  // namespace
}  // namespace codeact
