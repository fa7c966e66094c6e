// `codeact run|describe --backend hyperlight` as a black box: on a machine without the SDK the
// answer is a quick, specific `unavailable`; through the tests' fake SDK (tests/fakes) the code
// reaches the host tool.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>

#include "files/mount_capture.hpp"
#include "process/child.hpp"
#include "process/helper_command.hpp"
#include "testing/cli_support.hpp"
#include "testing/fixtures.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;

using Cli = testing::ProgramRun;
using testing::RunCli;
using testing::SourcePath;

bool SdkInstalled() {
  auto r = internal::RunCommand({"/usr/bin/python3.11", "-I", "-c", "import hyperlight_sandbox"},
                                "", std::chrono::seconds(30));
  return r.ok() && r->exit.exited && r->exit.exit_code == 0;
}

TEST(HyperlightCliTest, WithoutTheSdkTheRunIsUnavailableWithinTwoSeconds) {
  if (SdkInstalled()) GTEST_SKIP() << "the hyperlight_sandbox SDK is installed here";
  const auto start = std::chrono::steady_clock::now();
  const Cli c = RunCli({"run", "--backend", "hyperlight", SourcePath("samples/hello.py")});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(2));
  EXPECT_EQ(c.exit_code, 1) << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("outcome").as_string(), "unavailable");
  EXPECT_EQ(v.at("backend").as_string(), "hyperlight");
  EXPECT_EQ(v.at("isolation").as_string(), "microvm");
  EXPECT_EQ(v.at("success").as_bool(), false);
  const std::string message(v.at("message").as_string());
  EXPECT_NE(message.find("No module named 'hyperlight_sandbox'"), std::string::npos) << message;
}

TEST(HyperlightCliTest, ThroughTheFakeSdkTheCodeReachesTheHostTool) {
  const Cli c =
      RunCli({"run", "--backend", "hyperlight", "--hyperlight-sdk", SourcePath("tests/fakes"),
              "--tools", SourcePath("tests/mcp_client/fixtures/tools.json"), "-"},
             "r = await call_tool('add', a=2, b=3)\nprint('sum', r)\nr\n");
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("stdout").as_string(), "sum 5\n");
  EXPECT_EQ(v.at("output"), bj::value(5));
  EXPECT_EQ(v.at("tool_calls").as_int64(), 1);
  EXPECT_EQ(v.at("backend").as_string(), "hyperlight");
}

// The acceptance list, through the CLI and the fake SDK: a bare --allow-domain HOST is
// not unavailable, the code sees http_get, a tool call and an /output file work, and a 2 MiB
// tool argument ends as a ToolError.
TEST(HyperlightCliTest, ABareDomainHttpGetAToolAnOutputFileAndATooLargeArgument) {
  const Cli c = RunCli(
      {"run", "--backend", "hyperlight", "--hyperlight-sdk", SourcePath("tests/fakes"),
       "--allow-domain", "api.example.com", "--tools",
       SourcePath("tests/mcp_client/fixtures/tools.json"), "-"},
      testing::Program(
          "hyperlight_cli/a_bare_domain_http_get_a_tool_an_output_file_and_a_too_large_argument"));
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("outcome").as_string(), "ok");
  EXPECT_EQ(v.at("stdout").as_string(), "True True\nArgumentsTooLarge\n");
  EXPECT_EQ(v.at("output"), bj::value(5));
  ASSERT_EQ(v.at("files").as_array().size(), 1u);
  EXPECT_EQ(v.at("files").at(0).at("path").as_string(), "/output/sum.txt");
}

TEST(HyperlightCliTest, DescribeShowsInputOutputAndDomainsButNoHostPath) {
  auto dir = internal::TempDir::Create("codeact-test-");
  ASSERT_TRUE(dir.ok());
  const std::string input = dir->path();
  std::ofstream(input + "/prices.csv") << "item,price\n";
  const Cli c = RunCli({"describe", "--backend", "hyperlight", "--input", input, "--allow-domain",
                        "api.example.com:GET"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string description(
      bj::parse(c.out).at("tools").at(0).at("function").at("description").as_string());
  EXPECT_NE(description.find("hyperlight backend, microvm isolation"), std::string::npos)
      << description;
  EXPECT_NE(description.find("/input (read-only): 1 input file(s) from the host: prices.csv"),
            std::string::npos)
      << description;
  EXPECT_NE(description.find("only these targets are reachable (scheme, host and port must match "
                             "exactly):\n- https://api.example.com (GET)\n"),
            std::string::npos)
      << description;
  EXPECT_NE(description.find("r = await http_get(url)"), std::string::npos) << description;
  EXPECT_EQ(description.find(input), std::string::npos) << description;

  // Inputs that cannot be staged (samples/ has subdirectories): said, without their paths.
  const std::string nested = SourcePath("samples");
  const Cli refused = RunCli({"describe", "--backend", "hyperlight", "--input", nested});
  ASSERT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_NE(refused.out.find("they cannot be staged as they are"), std::string::npos)
      << refused.out;
  EXPECT_EQ(refused.out.find(nested), std::string::npos) << refused.out;
}

TEST(HyperlightCliTest, FlagsTheBackendCannotHonourAreRefused) {
  // --allow-domain is both backends' (the local one serves it with host tools: EgressCliTest).
  const Cli pool = RunCli({"run", "--backend", "hyperlight", "--pool", "1", "-"}, "print(1)");
  EXPECT_EQ(pool.exit_code, 2);
  EXPECT_NE(pool.err.find("--pool is for the local backend"), std::string::npos) << pool.err;
  const Cli level =
      RunCli({"run", "--backend", "hyperlight", "--isolation", "namespaces", "-"}, "print(1)");
  EXPECT_EQ(level.exit_code, 2);
  EXPECT_NE(level.err.find("hyperlight always runs in a micro-VM"), std::string::npos) << level.err;
  EXPECT_EQ(RunCli({"run", "--input-dir", "/tmp", "-"}, "print(1)").exit_code, 2);
  const Cli mount =
      RunCli({"run", "--backend", "hyperlight", "--mount", "/tmp:/data", "-"}, "print(1)");
  EXPECT_EQ(mount.exit_code, 2);
  EXPECT_NE(mount.err.find("use --input"), std::string::npos) << mount.err;
  EXPECT_EQ(RunCli({"run", "--backend", "vm", "-"}, "print(1)").exit_code, 2);
  // A switch of the local backend too: refused, not dropped.
  for (const char* flag : {"--site-packages", "--accept-weaker-limits"}) {
    const Cli local_switch = RunCli({"run", "--backend", "hyperlight", flag, "-"}, "print(1)");
    EXPECT_EQ(local_switch.exit_code, 2) << flag;
    EXPECT_NE(local_switch.err.find(std::string(flag) + " is for the local backend"),
              std::string::npos)
        << local_switch.err;
  }
}

}  // namespace
}  // namespace codeact
