// What the HostLoop tests share (host_loop_test.cpp, host_loop_tool_calls_test.cpp): a pipe, the
// loop run over frames an in-process "child" wrote, and a wait on an event.
#pragma once

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

namespace codeact::internal::host_loop_test {

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

// Writes a tool call of `name` with no arguments into `from_child`, as the runner would.
inline ::testing::AssertionResult WriteToolCall(const Pipe& from_child, int id,
                                                const std::string& name) {
  const std::string call = R"({"type":"tool_call","id":)" + std::to_string(id) + R"(,"name":")" +
                           name + R"(","kwargs":{}})" + "\n";
  if (write(from_child.write_fd, call.data(), call.size()) == static_cast<ssize_t>(call.size()))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the tool call could not be written";
}

// Runs the loop over frames the "child" wrote (and then closed its end of); `sent`, when given,
// gets what the loop wrote to the child (the request).
inline LoopResult RunOverFrames(const std::string& frames, bool child_ready,
                                const RunExtras& extras, std::string* sent = nullptr) {
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

inline LoopResult RunOver(const std::string& frames, bool child_ready) {
  return RunOverFrames(frames, child_ready, {});
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

}  // namespace codeact::internal::host_loop_test
