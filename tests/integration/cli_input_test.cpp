// The codeact binary under bad input: files that are not files, inputs over their caps, bytes
// that are not text, malformed mounts, and a host short of file descriptors.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "testing/cli_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

using Cli = testing::ProgramRun;
using testing::RunCli;

class CliInputTest : public testing::ScratchDirTest {
 protected:
  CliInputTest() : ScratchDirTest("codeact-cli-input-") {}
};

// Each refused at once with exit 2 and a message naming the input; none is read (a FIFO without
// a writer would block forever, /dev/zero would never end).
TEST_F(CliInputTest, InputsThatAreNotRegularFilesAreRefusedQuickly) {
  const std::string fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string dir = dir_.string();
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"run", "/dev/zero"}, "code file /dev/zero is a character device, not a regular file"},
      {{"validate", "/dev/zero"}, "code file /dev/zero is a character device, not a regular file"},
      {{"validate", dir}, "code file " + dir + " is a directory, not a regular file"},
      {{"run", dir}, "code file " + dir + " is a directory, not a regular file"},
      {{"run", "--tools", "/dev/zero", "-"},
       "tools file /dev/zero is a character device, not a regular file"},
      {{"run", "--tools", dir, "-"}, "tools file " + dir + " is a directory, not a regular file"},
      {{"run", "--policy", "/dev/zero", "-"},
       "policy file /dev/zero is a character device, not a regular file"},
      {{"validate", "--policy", fifo, "-"},
       "policy file " + fifo + " is a FIFO, not a regular file"},
      {{"run", fifo}, "code file " + fifo + " is a FIFO, not a regular file"},
      {{"validate", fifo}, "code file " + fifo + " is a FIFO, not a regular file"},
  };
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    const Cli r = RunCli(c.args, "print(1)\n");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << c.args[1];
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(CliInputTest, InputsOverTheirCapsAreRefusedNotCut) {
  const std::string big_code(8 * 1024 * 1024 + 1, '#');
  const Cli from_stdin = RunCli({"run", "-"}, big_code);
  EXPECT_EQ(from_stdin.exit_code, 2);
  EXPECT_NE(
      from_stdin.err.find("code file (standard input) is larger than the limit of 8388608 bytes"),
      std::string::npos)
      << from_stdin.err;
  const std::string tools = dir_ / "tools.json";
  std::ofstream(tools) << std::string(1024 * 1024 + 1, ' ');
  const Cli tools_run = RunCli({"run", "--tools", tools, "-"}, "print(1)");
  EXPECT_EQ(tools_run.exit_code, 2);
  EXPECT_NE(
      tools_run.err.find("tools file " + tools + " is larger than the limit of 1048576 bytes"),
      std::string::npos)
      << tools_run.err;
}

TEST_F(CliInputTest, BytesThatAreNotTextAreAViolationAndCodingCookiesAreHonoured) {
  const Cli bad = RunCli({"run", "-"}, "print('a')\nprint('\xff\xfe')\n");
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  const bj::value v = bj::parse(bad.out);
  EXPECT_EQ(v.at("outcome"), "validation_failed");
  EXPECT_EQ(v.at("violations").at(0).at("rule"), "source-encoding");
  EXPECT_EQ(v.at("violations").at(0).at("line"), 2);
  EXPECT_NE(v.at("violations").at(0).at("message").as_string().find("byte 0xFF at offset 18"),
            std::string::npos)
      << bad.out;
  const Cli validate = RunCli({"validate", "-"}, "x = '\x80'\n");
  EXPECT_EQ(validate.exit_code, 1);
  EXPECT_NE(validate.out.find("\"rule\":\"source-encoding\""), std::string::npos) << validate.out;

  const std::string latin1 = "# -*- coding: latin-1 -*-\nprint('caf\xe9')\n";
  const Cli ran = RunCli({"run", "-"}, latin1);
  ASSERT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  EXPECT_EQ(bj::parse(ran.out).at("stdout"), "caf\xc3\xa9\n");
  EXPECT_EQ(RunCli({"validate", "-"}, latin1).exit_code, 0);
}

TEST_F(CliInputTest, MountsMustBeAbsoluteDistinctAndHaveAKnownMode) {
  const std::string host = dir_.string();
  fs::create_directories(dir_ / "other");
  const struct {
    std::string mount;
    std::string second;
    std::string message;
  } cases[] = {
      {host + ":out", "", "--mount path \"out\" in \"" + host + ":out\" must be absolute"},
      {host + ":out:rw", "", "must be absolute"},
      {host + ":/a/../b", "", "contains \"..\""},
      {host + ":/out:rx", "", "--mount mode \"rx\" in \"" + host + ":/out:rx\" is not ro or rw"},
      {host + ":/out", (dir_ / "other").string() + ":/out/",
       "uses the mount path /out of --mount \"" + host + ":/out\" again"},
      {host + ":/data", host + ":/./data:ro", "uses the mount path /data"},
      {host + ":/out:rw,max=0", "", "max=0 is not a positive size (e.g. 64M)"},
      {host + ":/out:rw,files=1k", "", "files=1k is not a positive count"},
      {host + ":/out:rw,size=1M", "", "\"size=1M\" is not max=SIZE (e.g. max=64M) or files=N"},
      {host + ":/out:ro,max=1M", "", "max= bounds what a run writes, so only a rw mount takes it"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"run", "--mount", c.mount};
    if (!c.second.empty()) args.insert(args.end(), {"--mount", c.second});
    args.push_back("-");
    const Cli r = RunCli(args, "print(1)");
    EXPECT_EQ(r.exit_code, 2) << c.mount << " " << c.second << ": " << r.out;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  // The same rules, all accepted: a host path with a colon in it, an explicit mode.
  fs::create_directories(dir_ / "a:b");
  const Cli ok = RunCli({"run", "--isolation", "process", "--mount",
                         (dir_ / "a:b").string() + ":/in:ro", "--mount", host + ":/out", "-"},
                        "print(1)");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // A mount's own disk bounds: 4096 files at most, so 5000 end the run as disk_limit.
  const Cli bounded = RunCli({"run", "--isolation", "process", "--mount",
                              host + ":/out:rw,max=64M,files=4096", "--no-validate", "-"},
                             "import os\nfor i in range(5000):\n    open(os.path.join(" +
                                 std::string("'") + host + "', 'f%d' % i), 'w').close()\n");
  const auto bounded_json = bj::parse(bounded.out.empty() ? "{}" : bounded.out).as_object();
  ASSERT_TRUE(bounded_json.contains("outcome")) << bounded.out << bounded.err;
  EXPECT_EQ(bounded_json.at("outcome"), "disk_limit") << bounded.out;
  EXPECT_NE(bounded.out.find("over its bound of 4096"), std::string::npos) << bounded.out;
}

// A host that may open only 64 files (soft = hard): the child's default max_open_files of 256 is
// lowered to what the host can grant, and the result says so, instead of every start failing
// with "setrlimit(RLIMIT_NOFILE, 256) failed". Root could raise the limit anyway
// (CAP_SYS_RESOURCE), so the test drops that capability where setpriv exists.
TEST_F(CliInputTest, UnderUlimit64RunsSucceedWithTheLimitLowered) {
  std::vector<std::string> prefix;
  if (::geteuid() == 0) {
    if (::access("/usr/bin/setpriv", X_OK) != 0)
      GTEST_SKIP() << "root without setpriv: the limit cannot bind";
    prefix = {"/usr/bin/setpriv", "--bounding-set", "-sys_resource", "--inh-caps", "-sys_resource"};
  }
  for (int i = 0; i < 5; ++i) {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {"/bin/sh", "-c", "ulimit -n 64 && exec \"$0\" run -", CODEACT_BINARY});
    const Cli c = testing::RunProgram(argv, "print(1)\n");
    ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
    const bj::value v = bj::parse(c.out);
    EXPECT_EQ(v.at("stdout"), "1\n");
    // First; a non-root host without a cgroup of its own adds a note on that after it.
    const std::string message(v.at("message").as_string());
    EXPECT_EQ(
        message.rfind(
            "max_open_files 256 is above the host's hard limit of 64 open files; the child got 64",
            0),
        0u)
        << message;
  }
}

}  // namespace
}  // namespace codeact
