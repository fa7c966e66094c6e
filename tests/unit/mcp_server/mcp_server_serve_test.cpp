// McpServer::Serve on descriptors: a stop lets calls finish within the grace and cancels the
// rest, a client's cancellation ends its run, and progress notifications; HandleMessage (the
// HTTP transport's entry) likewise (the fixture: mcp_server_fixture.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "codeact/provider.hpp"
#include "mcp_server/mcp_server.hpp"
#include "testing/fake_executor.hpp"
#include "testing/fake_validator.hpp"
#include "unit/mcp_server/mcp_server_fixture.hpp"

namespace codeact {
namespace {

using namespace mcp_server_test;  // NOLINT(build/namespaces): the fixture and its aliases
using internal::McpServer;
using internal::McpServerOptions;  // not codeact::McpServerOptions

// ---- shutdown and cancellation: Serve on descriptors ----

// Serve(fd) on a thread, fed through a pipe, with a stop pipe like the signal handler's.
class FdServe {
 public:
  explicit FdServe(McpServer& server) {
    EXPECT_EQ(::pipe(in_), 0);
    EXPECT_EQ(::pipe(stop_), 0);
    thread_ = std::thread([this, &server] {
      stopped_ = server.Serve(
          in_[0],
          [this](std::string_view line) {
            {
              std::lock_guard lock(mu_);
              lines_.emplace_back(line);
            }
            cv_.notify_all();
          },
          stop_[0]);
    });
  }
  ~FdServe() {
    if (in_[1] >= 0) ::close(in_[1]);
    if (thread_.joinable()) thread_.join();
    for (int fd : {in_[0], stop_[0], stop_[1]}) ::close(fd);
  }
  void Send(const std::string& line) {
    const std::string framed = line + "\n";
    EXPECT_EQ(::write(in_[1], framed.data(), framed.size()), static_cast<ssize_t>(framed.size()));
  }
  void CloseInput() {
    ::close(in_[1]);
    in_[1] = -1;
  }
  void Stop() { EXPECT_EQ(::write(stop_[1], "x", 1), 1); }
  // Waits for Serve to return; whether a stop ended it.
  bool Join() {
    thread_.join();
    return stopped_;
  }
  std::map<std::string, json::object> ById() {
    std::lock_guard lock(mu_);
    std::map<std::string, json::object> out;
    for (const auto& line : lines_) {
      const json::object message = json::parse(line).as_object();
      if (message.contains("id")) out[json::serialize(message.at("id"))] = message;
    }
    return out;
  }
  // Waits (up to 30 s) until `done` holds for the lines written so far; returns them.
  std::vector<std::string> WaitForLines(
      const std::function<bool(const std::vector<std::string>&)>& done) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return done(lines_); });
    return lines_;
  }
  std::size_t Lines() {
    std::lock_guard lock(mu_);
    return lines_.size();
  }

 private:
  int in_[2] = {-1, -1};
  int stop_[2] = {-1, -1};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  bool stopped_ = false;
};

bool WaitStarted(ScriptedRuns& e, int n) {
  std::unique_lock lock(e.mu);
  return e.cv.wait_for(lock, std::chrono::seconds(30), [&] { return e.started >= n; });
}

TEST_F(McpServerTest, AStopLetsCallsFinishWithinTheGraceThenCancelsAndAnswersTheRest) {
  McpServerOptions o = Options();
  o.shutdown_grace = std::chrono::milliseconds(500);
  McpServer server(std::move(o));
  FdServe serve(server);
  serve.Send(CallLine(1, json::object{{"code", "sleep:100"}}));
  serve.Send(CallLine(2, json::object{{"code", "block"}}));
  ASSERT_TRUE(WaitStarted(*script_, 2));
  const auto stop = std::chrono::steady_clock::now();
  serve.Stop();
  EXPECT_TRUE(serve.Join());
  const auto took = std::chrono::steady_clock::now() - stop;
  EXPECT_GE(took, std::chrono::milliseconds(450)) << "the grace was not given";
  EXPECT_LT(took, std::chrono::seconds(10));
  auto by_id = serve.ById();
  ASSERT_EQ(by_id.size(), 2u);
  EXPECT_EQ(by_id["1"].at("result").at("structuredContent").at("outcome"), "ok");
  const auto& cancelled = by_id["2"].at("result");
  EXPECT_EQ(cancelled.at("isError"), true);
  EXPECT_EQ(cancelled.at("structuredContent").at("outcome"), "cancelled");
  EXPECT_EQ(cancelled.at("structuredContent").at("message"),
            "cancelled: the server is shutting down");
  EXPECT_EQ(json::parse(cancelled.at("content").at(0).at("text").as_string()).at("outcome"),
            "cancelled");
}

TEST_F(McpServerTest, NothingIsReadAfterAStop) {
  McpServer server(Options());
  int in[2], stop[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(stop), 0);
  const std::string line = CallLine(1, json::object{{"code", "x"}}) + "\n" +
                           R"({"jsonrpc":"2.0","id":2,"method":"ping"})"
                           "\n";
  ASSERT_EQ(::write(in[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  ASSERT_EQ(::write(stop[1], "x", 1), 1);
  std::vector<std::string> lines;
  EXPECT_TRUE(server.Serve(
      in[0], [&](std::string_view l) { lines.emplace_back(l); }, stop[0]));
  EXPECT_TRUE(lines.empty());
  EXPECT_TRUE(seen_arguments_.empty());
  for (int fd : {in[0], in[1], stop[0], stop[1]}) ::close(fd);
}

TEST_F(McpServerTest, ASecondStopCancelsAtOnce) {
  McpServerOptions o = Options();
  o.shutdown_grace = std::chrono::seconds(600);
  McpServer server(std::move(o));
  FdServe serve(server);
  serve.Send(CallLine(1, json::object{{"code", "block"}}));
  ASSERT_TRUE(WaitStarted(*script_, 1));
  const auto stop = std::chrono::steady_clock::now();
  serve.Stop();
  serve.Stop();
  EXPECT_TRUE(serve.Join());
  EXPECT_LT(std::chrono::steady_clock::now() - stop, std::chrono::seconds(20));
  EXPECT_EQ(serve.ById()["1"].at("result").at("structuredContent").at("outcome"), "cancelled");
}

TEST_F(McpServerTest, AStopWhileWaitingAtEndOfInputStillCancels) {
  McpServerOptions o = Options();
  o.shutdown_grace = std::chrono::milliseconds(0);
  McpServer server(std::move(o));
  FdServe serve(server);
  serve.Send(CallLine(1, json::object{{"code", "block"}}));
  ASSERT_TRUE(WaitStarted(*script_, 1));
  serve.CloseInput();
  serve.Stop();
  EXPECT_TRUE(serve.Join());
  EXPECT_EQ(serve.ById()["1"].at("result").at("structuredContent").at("outcome"), "cancelled");
}

// MCP: "the receiver SHOULD NOT send a response for the cancelled request".
TEST_F(McpServerTest, AClientCancellationEndsTheRunAndTheCallIsNotAnswered) {
  McpServer server(Options());
  FdServe serve(server);
  const std::string big = "123456789012345678901234567890";
  serve.Send(CallLine(1, json::object{{"code", "block"}}).replace(22, 1, big));
  ASSERT_TRUE(WaitStarted(*script_, 1));
  serve.Send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" + big +
             R"(,"reason":"user pressed stop"}})");
  serve.Send(R"({"jsonrpc":"2.0","id":6,"method":"ping"})");
  serve.CloseInput();
  EXPECT_FALSE(serve.Join());
  EXPECT_EQ(serve.Lines(), 1u);  // the ping only
  EXPECT_TRUE(serve.ById().count("6"));
  std::lock_guard lock(script_->mu);
  ASSERT_EQ(script_->cancel_reasons.size(), 1u);
  EXPECT_EQ(script_->cancel_reasons[0], "the client cancelled the request: user pressed stop");
}

std::vector<json::object> Progress(const std::vector<std::string>& lines) {
  std::vector<json::object> out;
  for (const auto& line : lines) {
    json::object message = json::parse(line).as_object();
    if (message.contains("method") && message.at("method") == "notifications/progress")
      out.push_back(std::move(message));
  }
  return out;
}

TEST_F(McpServerTest, ACallWithAProgressTokenHearsProgressUntilItsAnswer) {
  McpServerOptions o = Options();
  o.progress_interval = std::chrono::milliseconds(50);
  McpServer server(std::move(o));
  FdServe serve(server);
  json::object call = json::parse(CallLine(7, json::object{{"code", "block"}})).as_object();
  call["params"].as_object()["_meta"] = json::object{{"progressToken", "tok-7"}};
  serve.Send(json::serialize(call));
  serve.Send(CallLine(8, json::object{{"code", "sleep:400"}}));  // no token: no progress
  const auto lines = serve.WaitForLines([](const auto& l) { return Progress(l).size() >= 3; });
  const auto progress = Progress(lines);
  ASSERT_GE(progress.size(), 3u);
  for (std::size_t i = 0; i < progress.size(); ++i) {
    const auto& params = progress[i].at("params").as_object();
    EXPECT_EQ(params.at("progressToken"), "tok-7");
    EXPECT_EQ(params.at("progress").to_number<int>(), static_cast<int>(i) + 1);
    EXPECT_EQ(params.at("message").as_string().rfind("execute_code still running after ", 0), 0u);
    EXPECT_FALSE(progress[i].contains("id"));
  }
  serve.Stop();  // grace 10 s: call 8 ends by itself, call 7 is cancelled and answered
  serve.Stop();
  EXPECT_TRUE(serve.Join());
  const auto all = serve.WaitForLines([](const auto&) { return true; });
  // Nothing about call 7 follows its answer.
  bool answered = false;
  for (const auto& line : all) {
    const json::object message = json::parse(line).as_object();
    if (message.contains("id") && message.at("id") == 7) answered = true;
    if (answered) EXPECT_FALSE(message.contains("method")) << line;
  }
  EXPECT_TRUE(answered);
}

// The HTTP transport hands each POST to HandleMessage: a notifications/cancelled in one reaches
// the call another is running (the same MCP session's server).
TEST_F(McpServerTest, HandleMessageCallsAreCancelledByANotificationInAnotherMessage) {
  McpServer server(Options());
  std::optional<std::string> answer;
  std::thread call([&] {
    answer = server.HandleMessage(CallLine(5, json::object{{"code", "block"}}), {});
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  // Sent until the call has ended: a notification before the call is registered finds nothing.
  std::atomic<bool> done{false};
  std::thread canceller([&] {
    while (!done.load() && std::chrono::steady_clock::now() < deadline) {
      EXPECT_FALSE(
          server
              .HandleMessage(
                  R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user abort"}})",
                  {})
              .has_value());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  call.join();
  done.store(true);
  canceller.join();
  ASSERT_TRUE(answer.has_value());
  const json::object r = json::parse(*answer).as_object();
  EXPECT_EQ(r.at("result").at("structuredContent").at("outcome"), "cancelled") << *answer;
  EXPECT_NE(r.at("result").at("structuredContent").at("message").as_string().find("user abort"),
            std::string::npos)
      << *answer;
}

// HandleMessage (HTTP) sends a call's progress to its `notify`, and nothing once it returned.
TEST_F(McpServerTest, HandleMessageSendsProgressToNotifyUntilItReturns) {
  McpServerOptions o = Options();
  o.progress_interval = std::chrono::milliseconds(50);
  McpServer server(std::move(o));
  std::mutex mu;
  std::vector<std::string> notes;
  const std::function<void(const std::string&)> notify = [&](const std::string& line) {
    std::lock_guard lock(mu);
    notes.push_back(line);
  };
  json::object call = json::parse(CallLine(4, json::object{{"code", "sleep:400"}})).as_object();
  call["params"].as_object()["_meta"] = json::object{{"progressToken", 44}};
  const auto answer = server.HandleMessage(json::serialize(call), {}, notify);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(json::parse(*answer).at("result").at("structuredContent").at("stdout"), "slept\n");
  std::size_t count = 0;
  {
    std::lock_guard lock(mu);
    count = notes.size();
    ASSERT_GE(count, 3u);
    for (std::size_t i = 0; i < notes.size(); ++i) {
      const json::value n = json::parse(notes[i]);
      EXPECT_EQ(n.at("method"), "notifications/progress");
      EXPECT_EQ(n.at("params").at("progressToken"), 44);
      EXPECT_EQ(n.at("params").at("progress").to_number<int>(), static_cast<int>(i) + 1);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(notes.size(), count);
    notes.clear();
  }
  // No token: nothing.
  EXPECT_TRUE(server.HandleMessage(CallLine(5, json::object{{"code", "sleep:200"}}), {}, notify)
                  .has_value());
  std::lock_guard lock(mu);
  EXPECT_TRUE(notes.empty());
}

TEST_F(McpServerTest, NoProgressWithoutATokenOrWithAnIntervalOfZero) {
  McpServerOptions o = Options();
  o.progress_interval = std::chrono::milliseconds(0);
  McpServer server(std::move(o));
  FdServe serve(server);
  json::object call = json::parse(CallLine(1, json::object{{"code", "sleep:300"}})).as_object();
  call["params"].as_object()["_meta"] = json::object{{"progressToken", 5}};
  serve.Send(json::serialize(call));
  serve.CloseInput();
  EXPECT_FALSE(serve.Join());
  const auto lines = serve.WaitForLines([](const auto&) { return true; });
  ASSERT_EQ(lines.size(), 1u) << lines.front();
  EXPECT_TRUE(Progress(lines).empty());
}

// ---- the read loop's threads (common/leader_followers.hpp) ----

// A stream that gives one line per refill of its buffer and records which thread read each.
class LineByLineBuf : public std::streambuf {
 public:
  explicit LineByLineBuf(std::vector<std::string> lines) : lines_(std::move(lines)) {}
  std::vector<std::thread::id> read_on;  // per line; read after Serve returned

 protected:
  int_type underflow() override {
    if (next_ == lines_.size()) return traits_type::eof();
    current_ = lines_[next_++] + "\n";
    read_on.push_back(std::this_thread::get_id());
    setg(current_.data(), current_.data(), current_.data() + current_.size());
    return traits_type::to_int_type(current_[0]);
  }

 private:
  std::vector<std::string> lines_;
  std::size_t next_ = 0;
  std::string current_;
};

TEST_F(McpServerTest, ACallReadWhileASlotIsFreeRunsOnTheThreadThatReadIt) {
  McpServerOptions o = Options();
  o.max_concurrent_calls = 4;
  std::mutex mu;
  std::map<std::string, std::thread::id> ran_on;  // by the call's arguments
  o.execute = [&mu, &ran_on, inner = o.execute](const std::string& arguments,
                                                const CancellationToken& cancel,
                                                const OutputCallback& on_output) {
    {
      std::lock_guard lock(mu);
      ran_on[arguments] = std::this_thread::get_id();
    }
    return inner(arguments, cancel, on_output);
  };
  McpServer server(std::move(o));
  std::vector<std::string> lines = {R"({"jsonrpc":"2.0","id":"p","method":"ping"})"};
  for (int i = 1; i <= 3; ++i)  // fewer than the slots: each finds one free
    lines.push_back(CallLine(i, json::object{{"code", "print(" + std::to_string(i) + ")"}}));
  LineByLineBuf buf(lines);
  std::istream in(&buf);
  std::vector<std::string> out;
  server.Serve(in, [&](std::string_view line) {
    std::lock_guard lock(mu);
    out.emplace_back(line);
  });
  EXPECT_EQ(out.size(), 4u);
  ASSERT_EQ(buf.read_on.size(), 4u);
  ASSERT_EQ(ran_on.size(), 3u);
  for (int i = 1; i <= 3; ++i) {
    const std::string arguments =
        json::serialize(json::object{{"code", "print(" + std::to_string(i) + ")"}});
    ASSERT_TRUE(ran_on.count(arguments)) << arguments;
    EXPECT_EQ(ran_on[arguments], buf.read_on[static_cast<std::size_t>(i)]) << "call " << i;
    EXPECT_NE(ran_on[arguments], std::this_thread::get_id()) << "Serve's caller only waits";
  }
}

// With every slot taken, another thread still reads: the cancellations reach the running calls.
TEST_F(McpServerTest, ACancellationReachesTheCallsWhileEverySlotIsTaken) {
  McpServerOptions o = Options();
  o.max_concurrent_calls = 2;
  McpServer server(std::move(o));
  FdServe serve(server);
  serve.Send(CallLine(1, json::object{{"code", "block"}}));
  serve.Send(CallLine(2, json::object{{"code", "block"}}));
  ASSERT_TRUE(WaitStarted(*script_, 2));
  for (int id : {1, 2}) {
    serve.Send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
               std::to_string(id) + R"(,"reason":"enough"}})");
  }
  serve.Send(R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
  serve.CloseInput();
  EXPECT_FALSE(serve.Join());
  EXPECT_EQ(serve.Lines(), 1u);  // the ping only: cancelled calls are not answered
  EXPECT_TRUE(serve.ById().count("3"));
  std::lock_guard lock(script_->mu);
  EXPECT_EQ(script_->cancel_reasons,
            (std::vector<std::string>{"the client cancelled the request: enough",
                                      "the client cancelled the request: enough"}));
}

// N+1 calls with N slots: the last waits (the reading goes on past it) and starts when one ends.
TEST_F(McpServerTest, AtMostMaxConcurrentCallsRunAndTheNextStartsWhenOneEnds) {
  McpServerOptions o = Options();
  o.max_concurrent_calls = 2;
  McpServer server(std::move(o));
  FdServe serve(server);
  for (int id : {1, 2, 3}) serve.Send(CallLine(id, json::object{{"code", "block"}}));
  serve.Send(R"({"jsonrpc":"2.0","id":9,"method":"ping"})");
  ASSERT_EQ(serve.WaitForLines([](const auto& l) { return !l.empty(); }).size(), 1u);
  ASSERT_TRUE(WaitStarted(*script_, 2));
  {
    std::lock_guard lock(script_->mu);
    EXPECT_EQ(script_->started, 2) << "a third call started while two ran";
  }
  serve.Send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
  ASSERT_TRUE(WaitStarted(*script_, 3));
  for (int id : {2, 3}) {
    serve.Send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
               std::to_string(id) + "}}");
  }
  serve.CloseInput();
  EXPECT_FALSE(serve.Join());
  std::lock_guard lock(script_->mu);
  EXPECT_EQ(script_->cancel_reasons.size(), 3u);
}

// The end of the input is no shutdown: every queued call runs and is answered.
TEST_F(McpServerTest, EndOfInputAnswersEveryQueuedCall) {
  McpServerOptions o = Options();
  o.max_concurrent_calls = 1;
  o.max_queued_calls = 2;
  McpServer server(std::move(o));
  FdServe serve(server);
  for (int id = 1; id <= 5; ++id) serve.Send(CallLine(id, json::object{{"code", "sleep:20"}}));
  serve.CloseInput();
  EXPECT_FALSE(serve.Join());
  const auto by_id = serve.ById();
  ASSERT_EQ(by_id.size(), 5u);
  for (const auto& [id, response] : by_id)
    EXPECT_EQ(response.at("result").at("structuredContent").at("stdout"), "slept\n") << id;
}

// A batch longer than the slots and the queue together: the reader cannot run the call it kept
// while it waits for room, so another thread does; the answer is still one array in order.
TEST_F(McpServerTest, ABatchLongerThanTheSlotsAndTheQueueIsOneArrayInItsOrder) {
  McpServerOptions o = Options();
  o.max_concurrent_calls = 1;
  o.max_queued_calls = 1;
  McpServer server(std::move(o));
  std::string batch;
  for (int id = 1; id <= 5; ++id)
    batch += (batch.empty() ? "[" : ",") + CallLine(id, json::object{{"code", "sleep:10"}});
  std::istringstream in(InitializeLine("2025-03-26") + "\n" + batch + "]\n");
  std::mutex mu;
  std::vector<std::string> lines;
  server.Serve(in, [&](std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  });
  ASSERT_EQ(lines.size(), 2u);  // initialize, and the batch's one answer
  const json::value v = json::parse(lines[1]);
  ASSERT_TRUE(v.is_array()) << lines[1];
  ASSERT_EQ(v.as_array().size(), 5u) << lines[1];
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(v.as_array()[i].at("id"), i + 1);
    EXPECT_EQ(v.as_array()[i].at("result").at("structuredContent").at("stdout"), "slept\n");
  }
}

}  // namespace
}  // namespace codeact
