// Ordinary first attempts of an agent (computation, tool calls, data wrangling, files, classes,
// getattr/hasattr, sys, secrets, a try-import fallback, vars): each runs through `codeact run`
// as a model's program would, with a working directory and two command tools, and must be
// accepted by the validator and end `ok` with the output it is written to print. The programs
// are tests/fixtures/first_attempts/NN_*.py, each with its expected stdout in NN_*.out.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testing/cli_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class FirstAttemptsTest : public testing::ScratchDirTest {
 protected:
  FirstAttemptsTest() : ScratchDirTest("codeact-first-attempts-") {}
};

TEST_F(FirstAttemptsTest, EveryProgramIsAcceptedAndEndsOkWithItsOutput) {
  const fs::path corpus = testing::SourcePath("tests/fixtures/first_attempts");
  std::vector<fs::path> programs;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".py" && !name.empty() && name[0] >= '0' && name[0] <= '9')
      programs.push_back(entry.path());
  }
  std::sort(programs.begin(), programs.end());
  ASSERT_GE(programs.size(), 20u) << corpus;
  for (const fs::path& program : programs) {
    SCOPED_TRACE(program.filename().string());
    const fs::path work = dir_ / program.stem();
    fs::create_directories(work);
    const testing::ProgramRun c =
        testing::RunCli({"run", "--tools", (corpus / "tools.json").string(), "--workdir",
                         work.string(), program.string()});
    bj::value v;
    try {
      v = bj::parse(c.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON (" << e.what() << "): " << c.out << c.err;
      continue;
    }
    const bj::object& result = v.as_object();
    EXPECT_EQ(result.at("outcome").as_string(), "ok") << c.out << c.err;
    EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
    EXPECT_EQ(result.at("stdout").as_string(),
              ReadText(fs::path(program).replace_extension(".out")))
        << c.out;
  }
}

}  // namespace
}  // namespace codeact
