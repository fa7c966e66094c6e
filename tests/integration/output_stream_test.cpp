// ExecutionRequest::on_output against real children: output reaches the callback while the run
// goes on, at both levels, cold, from the warm pool (the zygote at the namespaces level on a root
// host) and in a session; the stream stops at the cap; a consumer that never reads costs chunks,
// not the run.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/executor_introspection.hpp"
#include "codeact/provider.hpp"
#include "codeact/session.hpp"
#include "integration/session_fixture.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

using Clock = std::chrono::steady_clock;

// What the callback got, with when.
struct Collected {
  std::mutex mu;
  std::vector<OutputChunk> chunks;  // data points into `texts`
  std::vector<std::string> texts;
  std::vector<Clock::time_point> at;
  OutputCallback Callback() {
    return [this](const OutputChunk& chunk) {
      std::lock_guard lock(mu);
      texts.emplace_back(chunk.data);
      chunks.push_back({chunk.stream, {}});
      at.push_back(Clock::now());
    };
  }
  std::string Joined(OutputStreamKind kind) {
    std::string all;
    for (std::size_t i = 0; i < texts.size(); ++i)
      if (chunks[i].stream == kind) all += texts[i];
    return all;
  }
  std::size_t Count(OutputStreamKind kind) {
    std::size_t n = 0;
    for (const auto& c : chunks) n += c.stream == kind;
    return n;
  }
};

RunSnapshot StreamSnapshot(ExecutionLimits limits = {}) {
  RunSnapshot s = testing::Snapshot(limits);
  s.policy.extra_allowed_imports.push_back("time");
  return s;
}

// The chunks came while the run went on: at least two on stdout, the first one well before the
// run returned (the program prints its three lines 0.4 s apart), and together they are exactly
// the result's output.
void ExpectStreamedWhileRunning(Collected& got, const ExecutionResult& r, Clock::time_point end,
                                const std::string& where) {
  EXPECT_EQ(r.outcome, Outcome::kOk) << where << ": " << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "line 0\nline 1\nline 2\n") << where;
  std::lock_guard lock(got.mu);
  EXPECT_GE(got.Count(OutputStreamKind::kStdout), 2u) << where;
  ASSERT_FALSE(got.at.empty()) << where;
  EXPECT_GE(end - got.at.front(), std::chrono::milliseconds(500))
      << where << ": the first chunk came only at the end";
  EXPECT_EQ(got.Joined(OutputStreamKind::kStdout), r.stdout_text) << where;
  EXPECT_EQ(got.Joined(OutputStreamKind::kStderr), r.stderr_text) << where;
  EXPECT_EQ(r.message.find("dropped"), std::string::npos) << where << ": " << r.message;
}

void ExpectStreams(Executor& executor, const std::string& where) {
  Collected got;
  ExecutionRequest request{testing::Program("output_stream/three_lines_apart")};
  request.on_output = got.Callback();
  const ExecutionResult r = executor.Execute(request, StreamSnapshot());
  ExpectStreamedWhileRunning(got, r, Clock::now(), where);
}

TEST(OutputStreamTest, ChunksArriveWhileAColdRunGoesOnAtBothLevels) {
  for (IsolationLevel level : {IsolationLevel::kProcess, IsolationLevel::kNamespaces}) {
    ExpectStreams(*testing::LocalExecutor(level), std::string(IsolationName(level)));
  }
}

TEST(OutputStreamTest, ChunksArriveFromAWarmChildAtBothLevels) {
  for (IsolationLevel level : {IsolationLevel::kProcess, IsolationLevel::kNamespaces}) {
    auto executor = testing::NewLocalExecutor(1, 60'000, true, level);
    const RunSnapshot snapshot = StreamSnapshot();
    ASSERT_TRUE(testing::Eventually([&] {
      executor->Warm(snapshot);
      return !internal::IdleChildPids(*executor, &snapshot).empty();
    }));
    ExpectStreams(*executor, "warm " + std::string(IsolationName(level)));
  }
}

TEST(OutputStreamTest, ChunksArriveFromASessionsRun) {
  PROVIDER_OR_SKIP(provider, testing::Options());
  auto session = provider->OpenSession();
  ASSERT_TRUE(session.ok()) << session.status().message();
  Collected got;
  InvokeOptions options;
  options.on_output = got.Callback();
  const ExecutionResult r =
      (*session)->Execute(testing::Program("output_stream/three_lines_apart"), options);
  ExpectStreamedWhileRunning(got, r, Clock::now(), "session");
}

TEST(OutputStreamTest, AFloodStreamsNoMoreThanTheCap) {
  ExecutionLimits limits;
  limits.max_stdout_bytes = 200'000;
  Collected got;
  ExecutionRequest request{"print('z' * 10**7)"};
  request.on_output = got.Callback();
  const ExecutionResult r =
      testing::LocalExecutor(IsolationLevel::kNamespaces)->Execute(request, StreamSnapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stdout_text.size(), 200'000u);
  std::lock_guard lock(got.mu);
  EXPECT_EQ(got.Joined(OutputStreamKind::kStdout), r.stdout_text);
  for (const auto& text : got.texts) {
    EXPECT_LE(static_cast<std::int64_t>(text.size()), kOutputChunkMaxBytes);
  }
}

// The callback is stuck on its first chunk while the code prints 8 MiB under a 3 s wall clock:
// were the run held back by it, it would time out. It ends ok, with all its output, and the
// message counts the chunks that were not streamed.
TEST(OutputStreamTest, AConsumerThatNeverReadsDoesNotHoldTheRun) {
  ExecutionLimits limits;
  limits.max_stdout_bytes = 8 << 20;
  limits.wall_timeout_ms = 3000;
  std::mutex mu;
  std::condition_variable never;
  int calls = 0;
  ExecutionRequest request{"import sys\nfor i in range(128): sys.stdout.write('w' * 65536)"};
  request.on_output = [&](const OutputChunk&) {
    std::unique_lock lock(mu);
    // Stuck well past the run's wall clock; only its own deadline frees it, so that the test
    // ends (Execute waits for the call in progress).
    if (++calls == 1) never.wait_for(lock, std::chrono::seconds(5));
  };
  const ExecutionResult r =
      testing::LocalExecutor(IsolationLevel::kProcess)->Execute(request, StreamSnapshot(limits));
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_EQ(r.stdout_text.size(), 8u << 20);
  EXPECT_NE(r.message.find("output chunks dropped from the stream"), std::string::npos)
      << r.message;
}

}  // namespace
}  // namespace codeact
