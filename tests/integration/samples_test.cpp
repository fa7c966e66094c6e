// The samples run the way samples/README.md tells a user to run them, with their output checked,
// so a sample that stops working (or stops showing its feature) fails here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "json/base64.hpp"
#include "process/child.hpp"
#include "testing/cli_support.hpp"
#include "testing/fixtures.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

using testing::ProgramRun;
using testing::RunCli;
using testing::RunProgram;

std::string Sample(const std::string& rel) { return testing::SourcePath("samples/" + rel); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The result JSON a sample printed; an empty object (and a failure) if it is not JSON.
bj::value ParseResult(const ProgramRun& run) {
  bj::error_code ec;
  bj::value v = bj::parse(run.out, ec);
  EXPECT_FALSE(ec) << "not JSON: " << run.out << run.err;
  return ec ? bj::value(bj::object{}) : v;
}

std::string Decoded(const bj::value& file) {
  auto data = internal::Base64Decode(file.at("data_base64").as_string());
  EXPECT_TRUE(data.has_value()) << bj::serialize(file);
  return data.value_or("");
}

TEST(SamplesTest, ReadmeListsEverySample) {
  const std::string readme = ReadFile(Sample("README.md"));
  ASSERT_FALSE(readme.empty());
  int samples = 0;
  for (const auto& entry : fs::directory_iterator(Sample(""))) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (ext != ".py" && ext != ".cpp") continue;
    ++samples;
    EXPECT_NE(readme.find("| [`" + name + "`]"), std::string::npos) << name << " has no README row";
  }
  EXPECT_GE(samples, 6);
  EXPECT_NE(readme.find("| [`mcp/`]"), std::string::npos);
}

TEST(SamplesTest, HelloPrintsTheMeanAndReturnsTheSortedList) {
  const ProgramRun run = RunCli({"run", Sample("hello.py")});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const bj::value v = ParseResult(run);
  EXPECT_EQ(v.at("outcome"), "ok");
  EXPECT_EQ(v.at("stdout"), "hello from codeact: mean=3.875\n");
  EXPECT_EQ(v.at("output"), bj::parse("[1,1,2,3,4,5,6,9]"));
}

TEST(SamplesTest, ToolCallsGatherTheSumsAndCatchTheFailedCall) {
  const ProgramRun run =
      RunCli({"run", "--tools", Sample("tools/tools.json"), Sample("tool_calls.py")});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const bj::value v = ParseResult(run);
  EXPECT_EQ(v.at("outcome"), "ok");
  EXPECT_EQ(v.at("stdout"),
            "sums: [3, 30, 0.75]\n"
            "total: 33\n"
            "add failed: ToolArgumentsInvalid - add: arguments: Missing required property 'b'.\n");
  EXPECT_EQ(v.at("output"), bj::parse(R"({"sums":[3,30,0.75],"total":33})"));
  EXPECT_EQ(v.at("tool_calls"), 5);  // three gathered, one dependent, one failed
}

TEST(SamplesTest, CppToolSkipsTheUnknownSkuAndTotalsTheRest) {
#ifndef CODEACT_SAMPLE_CPP_TOOL
  GTEST_SKIP() << "samples/ is not part of this build (no add_subdirectory(samples))";
#else
  const ProgramRun run = RunProgram({CODEACT_SAMPLE_CPP_TOOL});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const bj::value v = ParseResult(run);
  EXPECT_EQ(v.at("success"), true) << run.out;
  EXPECT_EQ(v.at("stdout"), "skipped Z-999 - KeyError: unknown sku Z-999\ntotal 15.75\n");
  EXPECT_EQ(v.at("output"), 15.75);
  EXPECT_EQ(v.at("tool_calls"), 3);
#endif
}

TEST(SamplesTest, FileOutputCapturesTheCsvAndTheSummaryUnderTheMountPath) {
  const fs::path dir =
      fs::temp_directory_path() / ("codeact-samples-out-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const ProgramRun run = RunCli({"run", "--mount", dir.string() + ":/out", "--env", "OUT_DIR=/out",
                                 Sample("file_output.py")});
  fs::remove_all(dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const bj::value v = ParseResult(run);
  EXPECT_EQ(v.at("stdout"), "wrote report.csv and summary.json\n");
  EXPECT_EQ(v.at("output"), bj::parse(R"({"regions":3,"units":295})"));
  ASSERT_EQ(v.at("files").as_array().size(), 2u) << run.out;
  const bj::value& csv = v.at("files").at(0);
  EXPECT_EQ(csv.at("path"), "/out/report.csv");
  EXPECT_EQ(csv.at("media_type"), "text/csv");
  EXPECT_EQ(Decoded(csv), "region,units\r\nnorth,120\r\nsouth,80\r\neast,95\r\n");
  EXPECT_EQ(csv.at("size"), 44);
  const bj::value& summary = v.at("files").at(1);
  EXPECT_EQ(summary.at("path"), "/out/summary.json");
  EXPECT_EQ(summary.at("media_type"), "application/json");
  EXPECT_EQ(bj::parse(Decoded(summary)), bj::parse(R"({"regions":3,"units":295})"));
  EXPECT_TRUE(v.at("omitted_files").as_array().empty());
}

TEST(SamplesTest, RejectedProgramGetsOneViolationPerEscapeWithAHint) {
  const ProgramRun run = RunCli({"validate", Sample("rejected.py")});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  const bj::value v = ParseResult(run);
  EXPECT_EQ(v.at("ok"), false);
  struct Expected {
    int line;
    const char* rule;
    const char* in_message;
  };
  const Expected expected[] = {{4, "import-blocked", "subprocess"},
                               {6, "attribute-subprocess", "subprocess"},
                               {7, "builtin-blocked", "eval()"},
                               {8, "attribute-dunder", ".__class__"},
                               {8, "attribute-dunder", ".__subclasses__"}};
  const auto& violations = v.at("violations").as_array();
  ASSERT_EQ(violations.size(), std::size(expected)) << run.out;
  for (std::size_t i = 0; i < violations.size(); ++i) {
    SCOPED_TRACE(bj::serialize(violations[i]));
    EXPECT_EQ(violations[i].at("line"), expected[i].line);
    EXPECT_EQ(violations[i].at("rule"), expected[i].rule);
    EXPECT_NE(std::string(violations[i].at("message").as_string()).find(expected[i].in_message),
              std::string::npos);
    EXPECT_FALSE(violations[i].at("hint").as_string().empty());
  }

  // `run` refuses the same program before anything starts, with the same violations.
  const ProgramRun refused = RunCli({"run", Sample("rejected.py")});
  EXPECT_EQ(refused.exit_code, 1);
  const bj::value r = ParseResult(refused);
  EXPECT_EQ(r.at("outcome"), "validation_failed");
  EXPECT_EQ(r.at("stdout"), "");
  EXPECT_EQ(r.at("violations"), v.at("violations"));
}

TEST(SamplesTest, ApprovalRunsNothingWithoutADecisionAndShowsTheCodeToTheApprover) {
#ifndef CODEACT_SAMPLE_APPROVAL
  GTEST_SKIP() << "samples/ is not part of this build (no add_subdirectory(samples))";
#else
  const ProgramRun run = RunProgram({CODEACT_SAMPLE_APPROVAL});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(
      run.out,
      testing::Program(
          "samples/approval_runs_nothing_without_a_decision_and_shows_the_code_to_the_approver"));
#endif
}

TEST(SamplesTest, ApprovalToolsFileRunsOnlyWithTheApproveFlag) {
  const std::vector<std::string> args = {"--tools", Sample("tools/approval_tools.json"),
                                         Sample("tool_calls.py")};
  std::vector<std::string> refused_args = {"run"};
  refused_args.insert(refused_args.end(), args.begin(), args.end());
  const ProgramRun refused = RunCli(refused_args);
  EXPECT_EQ(refused.exit_code, 1);
  const bj::value r = ParseResult(refused);
  EXPECT_EQ(r.at("outcome"), "approval_required");
  EXPECT_EQ(r.at("tool_calls"), 0);
  EXPECT_EQ(r.at("stdout"), "");
  EXPECT_NE(std::string(r.at("message").as_string()).find("need approval: add"), std::string::npos)
      << refused.out;

  std::vector<std::string> approved_args = {"run", "--approve"};
  approved_args.insert(approved_args.end(), args.begin(), args.end());
  const ProgramRun approved = RunCli(approved_args);
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  const bj::value a = ParseResult(approved);
  EXPECT_EQ(a.at("outcome"), "ok");
  EXPECT_EQ(a.at("tool_calls"), 5);
}

TEST(SamplesTest, McpClientConfigStartsTheStdioServerWithAToolsFile) {
  const bj::value config = bj::parse(ReadFile(Sample("mcp/claude_desktop_config.json")));
  const bj::value& server = config.at("mcpServers").at("codeact");
  EXPECT_TRUE(fs::path(std::string(server.at("command").as_string())).is_absolute());
  EXPECT_EQ(server.at("args"), bj::parse(R"(["mcp","--tools","/path/to/tools.json"])"));
}

TEST(SamplesTest, McpRecordedSessionIsAnsweredAndTheCallSucceeds) {
  const ProgramRun run =
      RunCli({"mcp", "--tools", Sample("tools/tools.json")}, ReadFile(Sample("mcp/session.jsonl")));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::map<std::int64_t, bj::object> by_id;
  std::istringstream lines(run.out);
  std::string line;
  while (std::getline(lines, line)) {
    bj::error_code ec;
    const bj::value v = bj::parse(line, ec);
    ASSERT_FALSE(ec) << "stdout carried a line that is not JSON: " << line;
    EXPECT_EQ(v.at("jsonrpc"), "2.0");
    EXPECT_FALSE(v.as_object().contains("error")) << line;
    by_id[v.at("id").as_int64()] = v.as_object();
  }
  ASSERT_EQ(by_id.size(), 3u) << run.out;  // the notification gets no answer
  std::set<std::int64_t> ids;
  for (const auto& [id, response] : by_id) ids.insert(id);
  ASSERT_EQ(ids, (std::set<std::int64_t>{1, 2, 3}));

  EXPECT_EQ(by_id[1].at("result").at("protocolVersion"), "2025-06-18");
  const auto& tools = by_id[2].at("result").at("tools").as_array();
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0].at("name"), "execute_code");
  EXPECT_NE(std::string(tools[0].at("description").as_string()).find("`add(a: number, b: number)`"),
            std::string::npos);

  const bj::value& call = by_id[3].at("result");
  EXPECT_EQ(call.at("isError"), false) << bj::serialize(call);
  EXPECT_EQ(bj::parse(call.at("content").at(0).at("text").as_string()),
            call.at("structuredContent"));
  EXPECT_EQ(call.at("structuredContent").at("stdout"), "2 + 3 = 5\n");
  EXPECT_EQ(call.at("structuredContent").at("output"), 5);
  EXPECT_EQ(call.at("structuredContent").at("tool_calls"), 1);
}

}  // namespace
}  // namespace codeact
