// Running the codeact binary (or any program) as a black box from the integration tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "process/helper_command.hpp"

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

// A test with a scratch directory of its own under the temp dir (`prefix` and this process's pid),
// made before each test and removed after it.
class ScratchDirTest : public ::testing::Test {
 protected:
  explicit ScratchDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / (prefix_ + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace codeact::testing
