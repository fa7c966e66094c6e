// What the McpServer tests share (mcp_server_test.cpp, mcp_server_serve_test.cpp): the fake
// executor's script and McpServerTest, a provider on the fakes wired as `codeact mcp` wires it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codeact/provider.hpp"
#include "mcp_server/mcp_server.hpp"
#include "testing/fake_executor.hpp"
#include "testing/fake_validator.hpp"

namespace codeact::mcp_server_test {

namespace json = boost::json;
using internal::McpServer;
using internal::McpServerOptions;

using testing::FakeExecutor;
// Rejects any code that mentions "import os"; accepts the rest.
using testing::FakeValidator;

// The fake executor's script, which answers by the shape of the code:
//   "barrier:<n>"  waits until `barrier_size` runs have been in flight at once, prints <n>
//   "block"        waits until the run is cancelled (at most 30 s), then ends as `cancelled`
//   "sleep:<ms>"   takes that long, then prints "slept"
//   "chunks"       streams "a\n" on stdout and "b\n" on stderr (ExecutionRequest::on_output),
//                  which are then its output
//   "raise"        a user exception
//   anything else  prints "hello", writes "warn" to stderr, returns 42, one tool call
class ScriptedRuns {
 public:
  ExecutionResult Answer(const ExecutionRequest& request) {
    ExecutionResult r;
    r.backend = "local";
    r.isolation = "process";
    const std::string& code = request.code;
    {
      std::lock_guard lock(mu);
      ++started;
    }
    cv.notify_all();
    if (code == "block") {
      auto wake = request.cancel.OnCancel([this] {
        std::lock_guard inner(mu);
        cv.notify_all();
      });
      std::unique_lock lock(mu);
      cv.wait_for(lock, std::chrono::seconds(30), [&] { return request.cancel.cancelled(); });
      cancel_reasons.push_back(request.cancel.reason());
      r.outcome = request.cancel.cancelled() ? Outcome::kCancelled : Outcome::kTimeout;
      r.exit_code = 137;
      r.message = "cancelled: " + request.cancel.reason();
      return r;
    }
    if (code.rfind("sleep:", 0) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(code.substr(6))));
      r.stdout_text = "slept\n";
      r.exit_code = 0;
      r.outcome = Outcome::kOk;
      return r;
    }
    if (code.rfind("barrier:", 0) == 0) {
      std::unique_lock lock(mu);
      ++in_flight;
      max_in_flight = std::max(max_in_flight, in_flight);
      cv.notify_all();
      if (in_flight >= barrier_size) released = true;  // latched: later calls pass freely
      cv.notify_all();
      const bool met = cv.wait_for(lock, std::chrono::seconds(30), [&] { return released; });
      reached_barrier = reached_barrier && met;
      --in_flight;
      r.stdout_text = code.substr(8) + "\n";
      r.exit_code = 0;
      r.outcome = Outcome::kOk;
      return r;
    }
    if (code == "chunks") {
      if (request.on_output) {
        request.on_output({OutputStreamKind::kStdout, "a\n"});
        request.on_output({OutputStreamKind::kStderr, "b\n"});
      }
      r.stdout_text = "a\n";
      r.stderr_text = "b\n";
      r.exit_code = 0;
      r.outcome = Outcome::kOk;
      return r;
    }
    if (code.find("raise") != std::string::npos) {
      r.stdout_text = "before\n";
      r.exit_code = 1;
      r.outcome = Outcome::kError;
      r.error = UserError{"ZeroDivisionError", "division by zero",
                          "Traceback (most recent call last):\n  File \"<code>\", line "
                          "2\nZeroDivisionError: division by zero\n"};
      r.omitted_files.push_back({"/out/big.bin", "over the 1 MiB file cap"});
      return r;
    }
    r.stdout_text = "hello\n";
    r.stderr_text = "warn\n";
    r.output_present = true;
    r.output_json = "42";
    r.tool_calls = 1;
    r.exit_code = 0;
    r.outcome = Outcome::kOk;
    return r;
  }

  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  int max_in_flight = 0;
  int barrier_size = 4;
  bool released = false;
  bool reached_barrier = true;
  int started = 0;                          // runs that began
  std::vector<std::string> cancel_reasons;  // of the "block" runs, as they ended
};

class McpServerTest : public ::testing::Test {
 protected:
  McpServerTest() {
    auto executor = std::make_unique<FakeExecutor>(
        [script = script_](const ExecutionRequest& request, const RunSnapshot&) {
          return script->Answer(request);
        });
    provider_ = *CodeActProvider::Create(ProviderOptions{}, std::move(executor),
                                         std::make_shared<FakeValidator>());
  }

  McpServerOptions Options() {
    McpServerOptions o;
    const ExecuteCodeFunction function(provider_);
    o.instructions = "use execute_code well";
    o.server_version = "9.9.9";
    o.tool_definition = [function] { return function.Definition(DefinitionFormat::kMcp); };
    o.execute = [this, function](const std::string& arguments, const CancellationToken& cancel,
                                 const OutputCallback& on_output) {
      {
        std::lock_guard lock(args_mu_);
        seen_arguments_.push_back(arguments);
      }
      return function.InvokeResult(arguments, {.cancel = cancel, .on_output = on_output});
    };
    o.log_to_stderr = false;
    return o;
  }

  // Sends one line and parses the one response it must produce.
  static json::object Ask(McpServer& server, std::string_view line) {
    auto response = server.HandleLine(line);
    EXPECT_TRUE(response.has_value()) << "no response to " << line;
    if (!response) return {};
    EXPECT_EQ(response->find('\n'), std::string::npos) << "a response must be one line";
    json::error_code ec;
    json::value v = json::parse(*response, ec);
    EXPECT_FALSE(ec) << *response;
    EXPECT_TRUE(v.is_object()) << *response;
    if (ec || !v.is_object()) return {};
    EXPECT_EQ(v.as_object().at("jsonrpc"), "2.0");
    return v.as_object();
  }

  static std::int64_t ErrorCode(const json::object& response) {
    const json::value* error = response.if_contains("error");
    if (error == nullptr) {
      ADD_FAILURE() << "expected an error, got " << json::serialize(response);
      return 0;
    }
    EXPECT_FALSE(response.contains("result"));
    return error->at("code").as_int64();
  }

  static std::string CallLine(const json::value& id, const json::value& arguments) {
    return json::serialize(
        json::object{{"jsonrpc", "2.0"},
                     {"id", id},
                     {"method", "tools/call"},
                     {"params", json::object{{"name", "execute_code"}, {"arguments", arguments}}}});
  }

  static std::string InitializeLine(std::string_view version) {
    return json::serialize(json::object{
        {"jsonrpc", "2.0"},
        {"id", 0},
        {"method", "initialize"},
        {"params",
         json::object{{"protocolVersion", version},
                      {"capabilities", json::object{}},
                      {"clientInfo", json::object{{"name", "test"}, {"version", "1"}}}}}});
  }

  std::shared_ptr<ScriptedRuns> script_ = std::make_shared<ScriptedRuns>();
  std::shared_ptr<CodeActProvider> provider_;
  std::mutex args_mu_;
  std::vector<std::string> seen_arguments_;
};

}  // namespace codeact::mcp_server_test
