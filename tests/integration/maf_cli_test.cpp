// Issue 21's two checks through the codeact binary, with a real child: a tools file with a tool
// named `sum` is refused up front (exit 2), and `r = add(a=1, b=2)` then `print(r)` fails with a
// message that says to await, never printing a coroutine. Also the run-time report of a tool
// coroutine never awaited (validation off), the --workdir, --allowed-builtins flags and single-
// file mounts through --mount.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "testing/cli_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

using Cli = testing::ProgramRun;
using testing::RunCli;
using testing::SourcePath;

class MafCliTest : public testing::ScratchDirTest {
 protected:
  MafCliTest() : ScratchDirTest("codeact-maf-cli-") {}

  // A tools file with one command tool called `name` (samples/tools/add.py).
  std::string ToolsFile(const std::string& name) {
    const fs::path file = dir_ / (name + ".json");
    std::ofstream(file) << R"({"tools":[{"name":")" << name
                        << R"(","description":"Add two numbers","parameters":{"type":"object",)"
                        << R"("properties":{"a":{"type":"number"},"b":{"type":"number"}}},)"
                        << R"("command":["python3",")" << SourcePath("samples/tools/add.py")
                        << R"("]}]})";
    return file.string();
  }

  // `codeact run` and `codeact describe` with a tools file whose one tool is called `name`: exit
  // 2, no result, and stderr naming the file and then `why`.
  void ExpectRefused(const std::string& name, const std::string& why) {
    const std::string tools = ToolsFile(name);
    for (const char* command : {"run", "describe"}) {
      std::vector<std::string> args = {command, "--tools", tools};
      if (std::string(command) == "run") args.push_back("-");
      const Cli c = RunCli(args, "print(await " + name + "(a=1, b=2))\n");
      EXPECT_EQ(c.exit_code, 2) << command << c.out << c.err;
      EXPECT_EQ(c.out, "") << command;
      EXPECT_NE(c.err.find("tools file " + tools + ": " + why), std::string::npos) << c.err;
    }
  }
};

TEST_F(MafCliTest, AToolNamedLikeABuiltinIsRefusedWithExit2) {
  ExpectRefused("sum", "tool name \"sum\" shadows the Python builtin sum()");
}

// A module name is known only from the validator's import list: `codeact run` checks it after its
// child has started (cli/run_command.cpp), and still refuses with exit 2 and prints no result.
TEST_F(MafCliTest, AToolNamedLikeAnAllowedModuleIsRefusedWithExit2) {
  ExpectRefused("json", "tool name \"json\" is the name of the module json");
}

TEST_F(MafCliTest, AnUnawaitedToolCallFailsValidationSayingToAwait) {
  const Cli c = RunCli({"run", "--tools", ToolsFile("add"), "-"}, "r = add(a=1, b=2)\nprint(r)\n");
  EXPECT_EQ(c.exit_code, 1) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("outcome").as_string(), "validation_failed");
  EXPECT_EQ(v.at("stdout").as_string(), "");
  const auto& violation = v.at("violations").at(0);
  EXPECT_EQ(violation.at("rule").as_string(), "tool-not-awaited");
  EXPECT_EQ(violation.at("line").as_int64(), 1);
  const std::string message(violation.at("message").as_string());
  EXPECT_NE(message.find("add(...) on line 1 is not awaited"), std::string::npos) << message;
  EXPECT_NE(message.find("add await"), std::string::npos) << message;
  EXPECT_EQ(c.out.find("coroutine object"), std::string::npos);
}

TEST_F(MafCliTest, TheAwaitedCallPrintsItsResult) {
  const Cli c =
      RunCli({"run", "--tools", ToolsFile("add"), "-"}, "r = await add(a=1, b=2)\nprint(r)\n");
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("stdout").as_string(), "3\n");
  // The message may carry the host's own notes (no cgroup for a non-root user), never this one.
  EXPECT_EQ(std::string(v.at("message").as_string()).find("never ran"), std::string::npos)
      << v.at("message");
}

// With the validator off (trusted code), the runner still reports the call that never ran.
TEST_F(MafCliTest, ACoroutineNeverAwaitedIsReportedInTheMessage) {
  const Cli c = RunCli({"run", "--no-validate", "--tools", ToolsFile("add"), "-"},
                       "r = add(a=1, b=2)\nprint(type(r).__name__)\n");
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("stdout").as_string(), "coroutine\n");
  EXPECT_EQ(v.at("tool_calls").as_int64(), 0);
  // First in the message; a non-root host's notes (no cgroup) may follow.
  EXPECT_EQ(
      std::string(v.at("message").as_string())
          .rfind("1 tool call(s) never ran because their coroutine was not awaited: add on line 1; "
                 "add await",
                 0),
      0u)
      << v.at("message");
}

TEST_F(MafCliTest, AllowedBuiltinsFlagReplacesTheBuiltins) {
  const Cli c = RunCli({"run", "--allowed-builtins", "print,len", "-"}, "print(sum([1, 2]))\n");
  EXPECT_EQ(c.exit_code, 1) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  EXPECT_EQ(v.at("violations").at(0).at("rule").as_string(), "builtin-blocked");
  const Cli bad = RunCli({"run", "--allowed-builtins", "print,,len", "-"}, "print(1)\n");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--allowed-builtins needs NAME[,NAME...]"), std::string::npos) << bad.err;
}

TEST_F(MafCliTest, WorkdirIsCapturedLikeAReadWriteMount) {
  const fs::path work = dir_ / "work";
  fs::create_directories(work);
  std::ofstream(work / "in.txt") << "hello";
  // /work at the namespaces level, the host path at the process level: the code asks os.environ
  // for neither, so it tries both.
  const std::string code =
      "from pathlib import Path\n"
      "base = Path('/work') if Path('/work/in.txt').exists() else Path('" +
      work.string() +
      "')\n"
      "(base / 'out.txt').write_text((base / 'in.txt').read_text().upper())\n";
  const Cli c = RunCli({"run", "--workdir", work.string(), "-"}, code);
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const bj::value v = bj::parse(c.out);
  bool found = false;
  for (const auto& f : v.at("files").as_array()) {
    if (f.at("path").as_string() == "/work/out.txt") found = true;
  }
  EXPECT_TRUE(found) << c.out;
  const Cli missing = RunCli({"run", "--workdir", (dir_ / "none").string(), "-"}, "print(1)\n");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("working directory"), std::string::npos) << missing.err;
}

// MAF mounts single files; so does --mount, at both levels: a read-write file rewritten comes
// back under its mount path, a read-only one is read, and a FIFO is refused with exit 2.
TEST_F(MafCliTest, MountTakesASingleFileAtBothLevels) {
  const fs::path config = dir_ / "config.json";
  const fs::path input = dir_ / "input.txt";
  std::ofstream(input) << "from the host";
  for (const std::string level : {"namespaces", "process"}) {
    std::ofstream(config) << R"({"n": 1})";
    const bool sandboxed = level == "namespaces";
    const std::string seen_config = sandboxed ? "/data/config.json" : config.string();
    const std::string seen_input = sandboxed ? "/in/input.txt" : input.string();
    const Cli c =
        RunCli({"run", "--isolation", level, "--mount", config.string() + ":/data/config.json:rw",
                "--mount", input.string() + ":/in/input.txt:ro", "-"},
               "import json\nprint(open(" + bj::serialize(bj::value(seen_input)) +
                   ").read())\nwith open(" + bj::serialize(bj::value(seen_config)) +
                   ", 'r+') as f:\n    d = json.load(f)\n    d['n'] += 1\n"
                   "    f.seek(0)\n    f.truncate()\n    json.dump(d, f)\n");
    ASSERT_EQ(c.exit_code, 0) << level << c.out << c.err;
    const bj::value v = bj::parse(c.out);
    EXPECT_EQ(v.at("isolation").as_string(), level);
    EXPECT_EQ(v.at("stdout").as_string(), "from the host\n");
    ASSERT_EQ(v.at("files").as_array().size(), 1u) << c.out;
    EXPECT_EQ(v.at("files").at(0).at("path").as_string(), "/data/config.json");
    EXPECT_EQ(v.at("files").at(0).at("data_base64").as_string(), "eyJuIjogMn0=");  // {"n": 2}
    std::ifstream in(config);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), R"({"n": 2})");
  }
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Cli refused = RunCli({"run", "--mount", fifo.string() + ":/data/x", "-"}, "print(1)\n");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("is a FIFO, not a directory or a regular file"), std::string::npos)
      << refused.err;
  const Cli help = RunCli({"run", "--help"}, "");
  EXPECT_NE(help.out.find("a host directory, or a single host file, the code may use"),
            std::string::npos)
      << help.out << help.err;
}

}  // namespace
}  // namespace codeact
