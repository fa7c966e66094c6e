// The codeact binary as a black box.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include "backends/executor_introspection.hpp"
#include "bench/cpu_time.hpp"
#include "bench/floors.hpp"
#include "bench/programs.hpp"
#include "common/data_dir.hpp"
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

TEST(CliTest, RunHelloSample) {
  const Cli c = RunCli({"run", SourcePath("samples/hello.py")});
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("success").as_bool(), true);
  EXPECT_EQ(v.at("stdout").as_string(), "hello from codeact: mean=3.875\n");
  EXPECT_EQ(v.at("output"), bj::parse("[1,1,2,3,4,5,6,9]"));
}

// --stream prints the output as NDJSON events while the run goes on: a chunk per line printed
// 0.4 s apart (so at least two), then the result, whose output the chunks add up to.
TEST(CliTest, RunStreamPrintsChunksThenTheResult) {
  const Cli c =
      RunCli({"run", "--stream", "-"}, testing::Program("output_stream/three_lines_apart"));
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  std::istringstream lines(c.out);
  std::string line;
  std::vector<bj::object> events;
  while (std::getline(lines, line)) events.push_back(bj::parse(line).as_object());
  ASSERT_GE(events.size(), 3u) << c.out;
  std::string streamed_out;
  int stdout_chunks = 0;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    const std::string event(events[i].at("event").as_string());
    ASSERT_TRUE(event == "stdout" || event == "stderr") << line;
    if (event == "stdout") {
      ++stdout_chunks;
      streamed_out += events[i].at("data").as_string();
    }
  }
  EXPECT_GE(stdout_chunks, 2) << c.out;
  const bj::object& last = events.back();
  EXPECT_EQ(last.at("event").as_string(), "result");
  EXPECT_EQ(last.at("data").at("outcome").as_string(), "ok");
  EXPECT_EQ(last.at("data").at("stdout").as_string(), "line 0\nline 1\nline 2\n");
  EXPECT_EQ(streamed_out, "line 0\nline 1\nline 2\n");
}

// "As root with TMPDIR a 0700 directory (what mktemp -d makes), every default-level run is
// setup_error" (issue 32): the runs' own uids could not reach their scratch directory below it.
// Every level runs, as root and as an unprivileged user, and nothing is left in TMPDIR; on a root
// host another run's scratch directories cannot be listed from inside a run.
TEST(CliTest, ATmpdirOnlyItsOwnerMaySearchStillRunsAtEveryLevel) {
  std::string pattern = std::filesystem::temp_directory_path().string() + "/codeact-0700-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::string tmp = pattern;
  struct Remove {
    std::string p;
    ~Remove() { std::filesystem::remove_all(p); }
  } remove{tmp};
  ASSERT_EQ(std::filesystem::status(tmp).permissions(), std::filesystem::perms::owner_all);
  const std::string code =
      testing::Program("cli/a_tmpdir_only_its_owner_may_search_still_runs_at_every_level");
  for (const std::string level : {"", "process", "namespaces"}) {
    SCOPED_TRACE("level " + (level.empty() ? std::string("default") : level));
    std::vector<std::string> args = {"/usr/bin/env", "TMPDIR=" + tmp, CODEACT_BINARY, "run"};
    if (!level.empty()) args.insert(args.end(), {"--isolation", level});
    args.push_back("-");
    const Cli c = testing::RunProgram(args, code);
    if (level == "namespaces" && c.exit_code == 2) {
      std::cout << "namespaces level refused up front here: " << c.err << "\n";
      continue;
    }
    ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
    const bj::value v = bj::parse(c.out);
    EXPECT_EQ(v.at("outcome").as_string(), "ok") << c.out;
    const bj::array& out = v.at("output").as_array();
    EXPECT_EQ(out.at(0), bj::value(1)) << c.out;
    // As root the scratch lives in /run/codeact (0711): a run may not list it. Elsewhere the
    // directory is absent or out of reach.
    EXPECT_NE(out.at(1).as_string(), "listed") << c.out;
    EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "left in TMPDIR";
  }
  if (::geteuid() == 0) {
    struct stat st {};
    ASSERT_EQ(::lstat("/run/codeact", &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0711u);
    EXPECT_EQ(st.st_uid, 0u);
  }
}

TEST(CliTest, ValidateRejectsOsSystem) {
  const Cli c = RunCli({"validate", "-"}, "import os; os.system('id')\n");
  EXPECT_EQ(c.exit_code, 1) << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("ok").as_bool(), false);
  EXPECT_NE(std::string(v.at("violations").at(0).at("message").as_string()).find("os.system"),
            std::string::npos)
      << c.out;
}

TEST(CliTest, ValidateAcceptsTheBenchmarkProgramAndHonoursPolicyFlags) {
  const auto program = bench::ReadProgram(bench::kFiftyLineProgram);
  ASSERT_TRUE(program.ok()) << program.status().message();
  const Cli fifty = RunCli({"validate", "-"}, *program);
  EXPECT_EQ(fifty.exit_code, 0) << fifty.out;
  EXPECT_EQ(fifty.out, "{\"ok\":true,\"violations\":[]}\n");
  EXPECT_EQ(RunCli({"validate", "-"}, "import json\nprint(json.dumps([1]))\n").exit_code, 0);
  EXPECT_EQ(RunCli({"validate", "--block-import", "json", "-"}, "import json\n").exit_code, 1);
  EXPECT_EQ(RunCli({"validate", "--allow-import", "xml", "-"}, "import xml\n").exit_code, 0);
  EXPECT_EQ(RunCli({"validate", "--bogus", "-"}, "x=1").exit_code, 2);
  EXPECT_EQ(RunCli({"validate"}).exit_code, 2);
  EXPECT_EQ(RunCli({"validate", "/nonexistent/file.py"}).exit_code, 2);
}

// The floors of `codeact bench` load the runner's own preload list: a change there fails here,
// not in a benchmark run. The fork floor's rate and CPU count forks that all ended well (into
// namespaces: each child made every namespace and mount, or the program fails); the warm floor
// gives one round trip per call, each checked against the output print(n) makes. Both fail (no
// figure) where the runner is missing.
TEST(CliTest, TheBenchsFloorsLoadTheRunnerAndCountTheirRuns) {
  const std::string python = internal::EmbeddedInstallationInterpreter();
  // 40 forks: ~40 ms of CPU or more, a few clock ticks.
  const auto floor = bench::ForkFloor(python, SourcePath("resources"), 2, 40);
  ASSERT_TRUE(floor.ok()) << floor.status().message();
  EXPECT_GT(floor->per_s, 0);
  EXPECT_GT(floor->cpu_us_per_fork, 0);
  const auto isolated =
      bench::ForkFloor(python, SourcePath("resources"), 2, 40, bench::ForkInto::kNamespaces);
  ASSERT_TRUE(isolated.ok()) << isolated.status().message();
  EXPECT_GT(isolated->per_s, 0);
  EXPECT_GT(isolated->cpu_us_per_fork, 0);
  const auto calls = bench::WarmFloorLatencies(python, SourcePath("resources"), 3);
  ASSERT_TRUE(calls.ok()) << calls.status().message();
  EXPECT_EQ(calls->size(), 3u);
  EXPECT_GT(calls->PercentileUs(0), 0);
  for (const Status& missing : {bench::ForkFloor(python, "/nonexistent", 2, 6).status(),
                                bench::WarmFloorLatencies(python, "/nonexistent", 3).status()}) {
    EXPECT_FALSE(missing.ok());
    EXPECT_NE(missing.message().find("No module named 'runner'"), std::string::npos)
        << missing.message();
  }
}

// The isolation floors fork each child into what a run at their level gets from the kernel (a
// group in each cgroup hierarchy; at the process level a scratch directory, and its own uid and a
// tmpfs working directory on a root host; at the namespaces level its namespaces), have the first
// child of each forker check that it got them, and leave nothing behind: no scratch directory in
// the base the test gave, no group in the parents the test made. A hierarchy that is not there is
// a clear error.
TEST(CliTest, TheIsolationFloorsMakeARunsObjectsAndLeaveNone) {
  const std::string python = internal::EmbeddedInstallationInterpreter();
  char made[] = "/tmp/codeact-floor-test-XXXXXX";
  ASSERT_NE(::mkdtemp(made), nullptr);
  const std::string scratch_base = made;
  ASSERT_EQ(::chmod(made, 0711), 0);  // as /tmp lets a run's uid reach its scratch directory
  struct Cleanup {
    std::string dir;
    std::vector<std::string> parents;
    ~Cleanup() {
      for (const auto& parent : parents) ::rmdir(parent.c_str());
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{scratch_base, {}};

  bench::RunObjects objects;
  objects.scratch_base = scratch_base;
  objects.max_processes = 32;
  objects.memory_bytes = 256LL << 20;
  const internal::ProcessLevelObjects here = internal::ProcessLevelObjectsHere();
  if (here.own_uid) objects.first_uid = bench::FloorFirstUid();
  if (here.private_workdir) objects.workdir_bytes = 1 << 20;
  for (const std::string& dir : here.cgroup_dirs) {
    const std::string parent = dir + "/floor-test-" + std::to_string(::getpid());
    ASSERT_EQ(::mkdir(parent.c_str(), 0755), 0) << parent << ": " << std::strerror(errno);
    cleanup.parents.push_back(parent);
    objects.cgroup_dirs.push_back(parent);
  }
  for (bench::ForkInto into : {bench::ForkInto::kProcess, bench::ForkInto::kNamespaces}) {
    const auto floor = bench::ForkFloor(python, SourcePath("resources"), 2, 40, into, objects);
    ASSERT_TRUE(floor.ok()) << floor.status().message();
    EXPECT_GT(floor->per_s, 0);
    EXPECT_GT(floor->cpu_us_per_fork, 0);
    EXPECT_TRUE(std::filesystem::is_empty(scratch_base));
    for (const auto& parent : objects.cgroup_dirs) {
      for (const auto& entry : std::filesystem::directory_iterator(parent))
        EXPECT_FALSE(entry.is_directory()) << "left behind: " << entry.path();
    }
  }

  objects.cgroup_dirs = {scratch_base + "/no-such-hierarchy"};
  const auto missing =
      bench::ForkFloor(python, SourcePath("resources"), 2, 6, bench::ForkInto::kProcess, objects);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no-such-hierarchy"), std::string::npos)
      << missing.status().message();
  EXPECT_TRUE(std::filesystem::is_empty(scratch_base));
}

// The machine's CPU time, which the bench reads around its sustained runs, counts what this
// thread burns: 0.3 s of it spent here raise the busy time by at least most of that (the clock
// ticks of 10 ms), and the total by at least as much.
TEST(CliTest, TheMachinesCpuCountsWhatThisThreadBurns) {
  const bench::MachineCpu before = bench::MachineCpuNow();
  ASSERT_GT(before.busy, 0);
  ASSERT_GE(before.total, before.busy);
  const double cpu0 = static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
  volatile std::uint64_t sink = 0;
  while (static_cast<double>(std::clock()) / CLOCKS_PER_SEC - cpu0 < 0.3) sink = sink + 1;
  const bench::MachineCpu after = bench::MachineCpuNow();
  EXPECT_GE(after.busy - before.busy, 0.25);
  EXPECT_GE(after.total - before.total, after.busy - before.busy - 1e-9);  // tick sums, divided
}

TEST(CliTest, RunTimeoutIsQuickAndSpecific) {
  // Against a run that does nothing, timed just before on the same machine (a loaded machine
  // slows both): the timeout adds its second and little more, never the code's 60.
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(RunCli({"run", "-"}, "pass\n").exit_code, 0);
  const auto baseline = std::chrono::steady_clock::now() - start;
  start = std::chrono::steady_clock::now();
  const Cli c = RunCli({"run", "--timeout", "1", "-"}, "import time\ntime.sleep(60)\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, baseline + std::chrono::seconds(2));
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_EQ(bj::parse(c.out).at("outcome").as_string(), "timeout");
}

TEST(CliTest, RunFloodIsTruncatedToTheCap) {
  const Cli c = RunCli({"run", "-"}, "print('x'*10**8)\n");
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("stdout_truncated").as_bool(), true);
  EXPECT_EQ(v.at("stdout").as_string().size(), 1u << 20);
}

TEST(CliTest, RunWithACommandTool) {
  const Cli c = RunCli({"run", "--tools", SourcePath("samples/tools/tools.json"), "-"},
                       "r = await call_tool('add', a=2, b=3)\nprint(r)\n");
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("stdout").as_string(), "5\n");
  EXPECT_EQ(v.at("tool_calls").as_int64(), 1);
}

TEST(CliTest, RunRejectedCodeShowsViolations) {
  const Cli c = RunCli({"run", "-"}, "import subprocess\nsubprocess.run(['id'])\n");
  EXPECT_EQ(c.exit_code, 1);
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("outcome").as_string(), "validation_failed");
  EXPECT_EQ(v.at("violations").at(0).at("rule").as_string(), "import-blocked");
}

// The code names a mount by its mount path at the namespaces level (the default here) and by
// its host path at the process level; either way the file comes back under the mount path.
TEST(CliTest, RunCapturesFilesFromAReadWriteMount) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("codeact-cli-mount-" + std::to_string(getpid()));
  for (const std::string level : {"namespaces", "process"}) {
    std::filesystem::create_directories(dir);
    const std::string seen = level == "namespaces" ? "/out" : dir.string();
    const Cli c = RunCli({"run", "--isolation", level, "--mount", dir.string() + ":/out", "-"},
                         "from pathlib import Path\nPath(" + bj::serialize(bj::value(seen)) +
                             ", 'report.txt').write_text('hi')\n");
    ASSERT_EQ(c.exit_code, 0) << level << c.out << c.err;
    const bj::value v = bj::parse(c.out);
    EXPECT_EQ(v.at("isolation").as_string(), level);
    ASSERT_EQ(v.at("files").as_array().size(), 1u) << c.out;
    EXPECT_EQ(v.at("files").at(0).at("path").as_string(), "/out/report.txt");
    EXPECT_EQ(v.at("files").at(0).at("data_base64").as_string(), "aGk=");
    std::filesystem::remove_all(dir);
  }
}

TEST(CliTest, RunAsUidsSetsTheRangeARootHostsRunsTakeUidsFrom) {
  if (geteuid() != 0) GTEST_SKIP() << "a non-root host runs its children as itself";
  const Cli c =
      RunCli({"run", "--no-validate", "--isolation", "process", "--run-as-uids", "300000:10", "-"},
             "import os\nprint(os.getuid(), os.getgid())\n");
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const std::string out(bj::parse(c.out).at("stdout").as_string());
  const long uid = std::atol(out.c_str());
  EXPECT_GE(uid, 300000) << out;
  EXPECT_LT(uid, 300010) << out;
  EXPECT_EQ(out, std::to_string(uid) + " " + std::to_string(uid) + "\n");
  EXPECT_EQ(RunCli({"run", "--run-as-uids", "0:5", "-"}, "print(1)\n").exit_code, 2);
}

TEST(CliTest, SelftestContainsEveryProbeAtTheNamespacesLevel) {
  const Cli c = RunCli({"selftest", "--isolation", "namespaces"});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("isolation level: namespaces"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("| connect to a local TCP port | contained | "), std::string::npos) << c.out;
  std::istringstream lines(c.out);
  for (std::string line; std::getline(lines, line);) {
    const bool promised = line.find(" | contained | ") != std::string::npos;
    EXPECT_FALSE(promised && line.ends_with("**no** |")) << line;
  }
  EXPECT_NE(c.out.find("every promised probe was contained"), std::string::npos) << c.out;
}

// Without a usable launcher the level is unavailable: auto falls back to the process level and
// says so in every result; a required level fails instead.
TEST(CliTest, AutoFallsBackToTheProcessLevelAndRequireRefuses) {
  auto run = [](std::vector<std::string> args) {
    args.insert(
        args.begin(),
        {"/usr/bin/env", "CODEACT_SANDBOX_LAUNCHER=/nonexistent/codeact-sandbox", CODEACT_BINARY});
    return testing::RunProgram(args, "print(1)");
  };
  const Cli fallback = run({"run", "-"});
  ASSERT_EQ(fallback.exit_code, 0) << fallback.out << fallback.err;
  EXPECT_EQ(bj::parse(fallback.out).at("isolation").as_string(), "process");
  const Cli required = run({"run", "--require-isolation", "namespaces", "-"});
  EXPECT_EQ(required.exit_code, 2);
  EXPECT_NE(
      required.err.find(
          "the namespaces isolation level is not available here: the codeact-sandbox launcher "
          "is not installed"),
      std::string::npos)
      << required.err;
  EXPECT_EQ(RunCli({"run", "--isolation", "process", "--require-isolation", "namespaces", "-"},
                   "print(1)")
                .exit_code,
            2);
  EXPECT_EQ(bj::parse(RunCli({"run", "-"}, "print(1)").out).at("isolation").as_string(),
            "namespaces");
}

TEST(CliTest, BadInvocationsExitTwo) {
  EXPECT_EQ(RunCli({}).exit_code, 2);
  EXPECT_EQ(RunCli({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunCli({"run", "--timeout", "abc", "-"}, "print(1)").exit_code, 2);
  EXPECT_EQ(RunCli({"run", "--mount", "/nonexistent:/x", "-"}, "print(1)").exit_code, 2);
  EXPECT_EQ(RunCli({"run", "--python", "/bin/false", "-"}, "print(1)").exit_code, 2);
}

TEST(CliTest, DescribeGivesAnOpenAIToolsList) {
  const Cli c = RunCli({"describe", "--tools", SourcePath("samples/tools/tools.json")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const bj::value v = bj::parse(c.out);
  const auto& fn = v.at("tools").at(0).at("function");
  EXPECT_EQ(fn.at("name").as_string(), "execute_code");
  EXPECT_NE(std::string(fn.at("description").as_string()).find("add("), std::string::npos);
  EXPECT_FALSE(v.at("instructions").as_string().empty());
}

}  // namespace
}  // namespace codeact

namespace codeact {
namespace {

TEST(CliTest, ADifferentPythonMinorVersionIsRefused) {
  const Cli c =
      RunCli({"run", "--python", std::string(CODEACT_TEST_FIXTURES) + "/fake_python310.sh", "-"},
             "print(1)");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("is Python 3.10 but the embedded validator is Python 3.11"),
            std::string::npos)
      << c.err;
}

TEST(CliTest, VersionAndLogFlags) {
  const Cli version = RunCli({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("codeact ", 0), 0u) << version.out;
  EXPECT_NE(version.out.find('.'), std::string::npos);

  EXPECT_EQ(RunCli({"--log-level", "loud", "describe"}).exit_code, 2);
  EXPECT_EQ(RunCli({"describe", "--log-format=xml"}).exit_code, 2);

  // JSON log lines: each a JSON object with the four fields, on stderr only.
  const std::string session =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})"
      "\n";
  const Cli mcp = RunCli({"mcp", "--pool", "0", "--log-format", "json"}, session);
  ASSERT_EQ(mcp.exit_code, 0) << mcp.err;
  std::istringstream lines(mcp.err);
  std::string line;
  int parsed = 0;
  while (std::getline(lines, line)) {
    const boost::json::value v = boost::json::parse(line);
    // The server's lines, and the library's own (the environment notes, logged once).
    EXPECT_TRUE(v.at("component") == "codeact mcp" || v.at("component") == "codeact") << line;
    EXPECT_TRUE(v.as_object().contains("time") && v.as_object().contains("level") &&
                v.as_object().contains("message"))
        << line;
    ++parsed;
  }
  EXPECT_GE(parsed, 1) << mcp.err;
  EXPECT_EQ(boost::json::parse(mcp.out).at("id"), 1);

  const Cli quiet = RunCli({"--log-level", "off", "mcp", "--pool", "0"}, session);
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;
}

TEST(CliTest, DescribeInEveryFormatAndMeasured) {
  const Cli anthropic = RunCli({"describe", "--format", "anthropic"});
  ASSERT_EQ(anthropic.exit_code, 0) << anthropic.err;
  const boost::json::value tool = boost::json::parse(anthropic.out).at("tools").at(0);
  EXPECT_EQ(tool.at("name"), "execute_code");
  EXPECT_EQ(tool.at("strict"), true);
  EXPECT_EQ(tool.at("input_schema").at("required").at(0), "code");
  EXPECT_NE(std::string(tool.at("description").as_string()).find("Imports allowed"),
            std::string::npos);
  const Cli responses = RunCli({"describe", "--format", "openai-responses"});
  ASSERT_EQ(responses.exit_code, 0);
  EXPECT_EQ(boost::json::parse(responses.out).at("tools").at(0).at("name"), "execute_code");
  const Cli mcp = RunCli({"describe", "--format", "mcp"});
  ASSERT_EQ(mcp.exit_code, 0);
  EXPECT_TRUE(boost::json::parse(mcp.out).at("tools").at(0).as_object().contains("outputSchema"));
  EXPECT_EQ(RunCli({"describe", "--format", "claude"}).exit_code, 2);

  const Cli measure = RunCli({"describe", "--measure"});
  ASSERT_EQ(measure.exit_code, 0) << measure.err;
  const boost::json::value m = boost::json::parse(measure.out);
  EXPECT_LE(m.at("core_chars").to_number<int>(), 2000);
  EXPECT_EQ(m.at("core_tokens_estimate").to_number<int>(),
            (m.at("core_chars").to_number<int>() + 3) / 4);
}

}  // namespace
}  // namespace codeact
