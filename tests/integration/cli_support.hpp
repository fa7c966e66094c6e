// Running the codeact binary (or any program) as a black box from the integration tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "process/child.hpp"

namespace codeact::testing {

struct ProgramRun {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

// A path in the source tree.
inline std::string SourcePath(const std::string& rel) {
  return std::string(CODEACT_SOURCE_DIR) + "/" + rel;
}

inline ProgramRun RunProgram(const std::vector<std::string>& argv,
                             const std::string& stdin_data = "") {
  auto r = internal::RunCommand(argv, stdin_data, std::chrono::seconds(120), 64 << 20);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  return {r->exit.exited ? r->exit.exit_code : 128 + r->exit.signal, r->stdout_text,
          r->stderr_text};
}

inline ProgramRun RunCli(std::vector<std::string> args, const std::string& stdin_data = "") {
  args.insert(args.begin(), CODEACT_BINARY);
  return RunProgram(args, stdin_data);
}

}  // namespace codeact::testing
