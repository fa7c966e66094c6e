// The runtime guard (src/guard) against real children, with the validator bypassed (the executor
// is called directly): at both isolation levels, on cold children (armed with the request) and
// on pooled ones (armed ahead of it; at the process level forked from the fork server). What an
// attacker's validator-passing program tried — processes, the network, host files, writes
// outside, /proc, setuid bits, disabling the guard, forging the bridge — fails with a clear
// error; what ordinary code needs — threads, asyncio, tool calls, the standard library's own
// compile/exec and imports — still works.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "backends/local/local_executor.hpp"
#include "files/mount_capture.hpp"
#include "os/errno_status.hpp"
#include "os/path_within.hpp"
#include "os/pipe.hpp"
#include "os/pipe_io.hpp"
#include "os/proc_stat.hpp"
#include "os/proc_tasks.hpp"
#include "os/resource_limits.hpp"
#include "os/unique_fd.hpp"
#include "testing/test_support.hpp"

namespace codeact {
namespace {

namespace fs = std::filesystem;
using testing::Eventually;
using testing::NewLocalExecutor;
using testing::Snapshot;

struct Mode {
  IsolationLevel level;
  bool pooled;  // a pooled child, armed ahead of its request (process level: forked)
};

std::string ModeName(const ::testing::TestParamInfo<Mode>& info) {
  return std::string(IsolationName(info.param.level)) + (info.param.pooled ? "Pooled" : "Cold");
}

// One guarded executor per mode, shared by the tests.
Executor& GuardedExecutor(const Mode& mode) {
  static std::map<std::pair<IsolationLevel, bool>, std::unique_ptr<Executor>> executors;
  auto& e = executors[{mode.level, mode.pooled}];
  if (!e) e = NewLocalExecutor(mode.pooled ? 1 : 0, 60'000, /*fork_server=*/true, mode.level);
  return *e;
}

// A Python string literal of one of our paths.
std::string Py(const std::string& s) { return "'" + s + "'"; }

class RuntimeGuardTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    auto dir = internal::TempDir::Create("codeact-guard-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    outside_ = std::make_unique<internal::TempDir>(std::move(*dir));
    secret_ = outside_->path() + "/secret.txt";
    std::ofstream(secret_) << kSecret;
  }

  ExecutionResult Run(const std::string& code, RunSnapshot snapshot = Snapshot()) {
    Executor& executor = GuardedExecutor(GetParam());
    if (GetParam().pooled) {
      // Wait until a child armed ahead of its request is ready, and check the run took it.
      EXPECT_TRUE(Eventually(
          [&] {
            executor.Warm(snapshot);
            return !internal::IdleChildPids(executor, &snapshot).empty();
          },
          std::chrono::seconds(30)))
          << "the pool did not fill";
      const auto served = internal::PoolCounters(executor).served;
      ExecutionResult r = executor.Execute({code}, snapshot);
      EXPECT_EQ(internal::PoolCounters(executor).served, served + 1)
          << "the run did not take a pooled child";
      return r;
    }
    return executor.Execute({code}, snapshot);
  }

  bool Landlock() const {
    return internal::GuardStatus(GuardedExecutor(GetParam())).landlock_abi > 0;
  }

  static constexpr const char* kSecret = "codeact-guard-test-secret-7f3a";
  std::unique_ptr<internal::TempDir> outside_;  // a host directory the code is given nothing of
  std::string secret_;
};

// Each attempt prints "<name>: <exception type>: <message>" or "<name>: ok".
std::string Attempts(const std::vector<std::pair<std::string, std::string>>& attempts) {
  std::string code =
      "def attempt(name, f):\n    try:\n        f()\n        print(name + ': ok')\n"
      "    except BaseException as e:\n        print(name + ': ' + type(e).__name__ + ': ' + "
      "str(e))\n";
  for (const auto& [name, expression] : attempts)
    code += "attempt(" + Py(name) + ", lambda: " + expression + ")\n";
  return code;
}

// The line an attempt printed.
std::string Line(const std::string& out, const std::string& name) {
  const std::string text = "\n" + out;
  const auto at = text.find("\n" + name + ": ");
  if (at == std::string::npos) return "";
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

TEST_P(RuntimeGuardTest, StartingAProcessFailsWithTheGuardsMessage) {
  const ExecutionResult r = Run(Attempts({
      {"fork", "__import__('os').fork()"},
      {"posix_spawn", "__import__('os').posix_spawn('/bin/true', ['true'], {})"},
      {"execv", "__import__('os').execv('/bin/true', ['true'])"},
      {"system", "__import__('os').system('id')"},
      {"popen", "__import__('os').popen('id').read()"},
  }));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  for (const char* name : {"fork", "posix_spawn", "execv", "system", "popen"}) {
    EXPECT_NE(Line(r.stdout_text, name).find("PermissionError: codeact guard: process creation: "),
              std::string::npos)
        << r.stdout_text;
  }
}

TEST_P(RuntimeGuardTest, ConnectingToAHostLoopbackPortFails) {
  internal::UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_TRUE(listener &&
              ::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
              ::listen(listener.get(), 8) == 0 &&
              ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  RunSnapshot s = Snapshot();
  s.policy.extra_allowed_imports.push_back("socket");  // so that the socket layer is what refuses
  const ExecutionResult r = Run(
      "import socket\n" +
          Attempts({
              {"inet", "socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(('127.0.0.1', " +
                           port + "))"},
              {"create_connection",
               "socket.create_connection(('127.0.0.1', " + port + "), timeout=2)"},
              {"inet6", "socket.socket(socket.AF_INET6, socket.SOCK_STREAM)"},
              {"unix",
               "socket.socket(socket.AF_UNIX, "
               "socket.SOCK_STREAM).connect('/run/codeact-no-such.sock')"},
              {"socketpair", "(lambda a, b: (a.send(b'x'), b.recv(1)))(*socket.socketpair())"},
          }),
      s);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_NE(Line(r.stdout_text, "inet").find("PermissionError: codeact guard: network: "),
            std::string::npos)
      << r.stdout_text;
  EXPECT_NE(
      Line(r.stdout_text, "create_connection").find("PermissionError: codeact guard: network: "),
      std::string::npos)
      << r.stdout_text;
  EXPECT_NE(Line(r.stdout_text, "inet6").find("PermissionError: codeact guard: network: "),
            std::string::npos);
  EXPECT_NE(
      Line(r.stdout_text, "unix").find("PermissionError: codeact guard: network: socket.connect"),
      std::string::npos)
      << r.stdout_text;
  EXPECT_EQ(Line(r.stdout_text, "socketpair"), "socketpair: ok") << r.stdout_text;
  pollfd p{listener.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "the listener has a connection";
}

TEST_P(RuntimeGuardTest, HostFilesOutsideTheAllowedPathsAreOutOfReach) {
  const std::string marker = outside_->path() + "/marker.txt";
  const ExecutionResult r = Run(
      "import os\n" +
      Attempts({
          {"read secret", "print(open(" + Py(secret_) + ").read())"},
          {"read via os.open", "print(os.read(os.open(" + Py(secret_) + ", os.O_RDONLY), 100))"},
          {"list outside", "print(os.listdir(" + Py(outside_->path()) + "))"},
          {"write marker", "open(" + Py(marker) + ", 'w').write('escaped')"},
          {"write here", "open('here.txt', 'w').write('fine')"},
      }));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find(kSecret), std::string::npos) << r.stdout_text;
  EXPECT_EQ(Line(r.stdout_text, "list outside").find("marker"), std::string::npos) << r.stdout_text;
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_EQ(Line(r.stdout_text, "write here"), "write here: ok") << r.stdout_text;
  if (GetParam().level == IsolationLevel::kNamespaces) {
    // Not even there: the sandbox's root holds none of the host's temporary files.
    EXPECT_NE(Line(r.stdout_text, "read secret").find("FileNotFoundError"), std::string::npos)
        << r.stdout_text;
  } else if (!Landlock()) {
    GTEST_SKIP()
        << "this kernel has no Landlock: the guard does not fence files at the process level";
  } else {
    for (const char* name : {"read secret", "read via os.open", "list outside", "write marker"}) {
      EXPECT_NE(Line(r.stdout_text, name).find(": PermissionError: [Errno 13] Permission denied"),
                std::string::npos)
          << r.stdout_text;
    }
  }
}

TEST_P(RuntimeGuardTest, ProcFilesAreOutOfReach) {
  const ExecutionResult r = Run(Attempts({
      {"self mem", "open('/proc/self/mem', 'rb')"},
      {"self environ", "open('/proc/self/environ', 'rb').read()"},
      {"init environ", "open('/proc/1/environ', 'rb').read()"},
      {"hostname", "open('/proc/sys/kernel/hostname').read()"},
      {"fds", "__import__('os').listdir('/proc/self/fd')"},
      {"status", "open('/proc/self/status').read()"},
  }));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  for (const char* name : {"self mem", "self environ", "init environ", "hostname", "fds"}) {
    EXPECT_NE(Line(r.stdout_text, name).find("PermissionError: codeact guard: /proc: "),
              std::string::npos)
        << r.stdout_text;
  }
  // Beneath the audit hook's list, Landlock refuses the rest of /proc.
  if (Landlock()) {
    EXPECT_NE(Line(r.stdout_text, "status").find("PermissionError: [Errno 13]"), std::string::npos)
        << r.stdout_text;
  }
}

TEST_P(RuntimeGuardTest, SetuidAndSetgidBitsAreRefused) {
  const ExecutionResult r =
      Run("import os\nopen('f', 'w').close()\n" +
          Attempts({
              {"chmod setuid", "os.chmod('f', 0o4755)"},
              {"chmod setgid", "os.chmod('f', 0o2755)"},
              {"open setuid", "os.close(os.open('g', os.O_CREAT | os.O_WRONLY, 0o4755))"},
              {"mkdir setgid", "os.mkdir('d', 0o2755)"},
              {"chmod plain", "os.chmod('f', 0o755)"},
          }) +
          "print(oct(os.stat('f').st_mode & 0o7777), os.path.exists('g'), os.path.exists('d'))\n");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_NE(
      Line(r.stdout_text, "chmod setuid").find("PermissionError: codeact guard: file modes: "),
      std::string::npos)
      << r.stdout_text;
  EXPECT_NE(
      Line(r.stdout_text, "chmod setgid").find("PermissionError: codeact guard: file modes: "),
      std::string::npos);
  EXPECT_NE(
      Line(r.stdout_text, "mkdir setgid").find("PermissionError: codeact guard: file modes: "),
      std::string::npos);
  // os.open's audit event carries no mode: the seccomp filter refuses the system call.
  EXPECT_NE(
      Line(r.stdout_text, "open setuid").find("PermissionError: [Errno 1] Operation not permitted"),
      std::string::npos)
      << r.stdout_text;
  EXPECT_EQ(Line(r.stdout_text, "chmod plain"), "chmod plain: ok");
  EXPECT_NE(r.stdout_text.find("0o755 False False\n"), std::string::npos) << r.stdout_text;
}

TEST_P(RuntimeGuardTest, ThreadsAsyncioAndToolCallsStillWork) {
  RunSnapshot s = Snapshot();
  s.policy.extra_allowed_imports.push_back("threading");
  s.tools.push_back(
      {"double", "Doubles", R"({"type":"object"})", false, [](const std::string& kwargs) {
         return ToolResult::Success(
             std::to_string(2 * boost::json::parse(kwargs).at("x").as_int64()));
       }});
  const ExecutionResult r =
      Run(testing::Program("runtime_guard/threads_asyncio_and_tool_calls_still_work"), s);
  ASSERT_EQ(r.outcome, Outcome::kOk)
      << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
  EXPECT_EQ(r.stdout_text, "[0, 1, 4, 9]\n6\n[0, 2, 4, 6, 8]\n[14]\n");
  EXPECT_EQ(r.tool_calls, 6);
}

TEST_P(RuntimeGuardTest, TheStandardLibrarysOwnCompileExecAndImportsStillWork) {
  RunSnapshot s = Snapshot();
  s.policy.extra_allowed_imports.push_back("xml.*");
  const ExecutionResult r =
      Run(testing::Program(
              "runtime_guard/the_standard_librarys_own_compile_exec_and_imports_still_work"),
          s);
  ASSERT_EQ(r.outcome, Outcome::kOk)
      << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
  EXPECT_EQ(r.stdout_text,
            "Point(x=1, y=None) Pair(a=1, b=2) 2 SQUARE Box(item=3)\ntyping.Optional[int]\n[1, "
            "2.5] 2.10 b\n");
}

TEST_P(RuntimeGuardTest, AnImportOutsideThePolicyFailsWhileTheStandardLibrarysOwnWork) {
  RunSnapshot s;  // the default policy
  const ExecutionResult r =
      Run(Attempts({
              {"socket", "__import__('socket')"},
              {"ctypes", "__import__('ctypes')"},
              {"from asyncio", "exec('from asyncio import subprocess')"},
              {"importlib", "exec('import importlib')"},
              {"json", "__import__('json').dumps({'a': [1]})"},
              {"asyncio", "__import__('asyncio').run(__import__('asyncio').sleep(0))"},
          }),
          s);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(Line(r.stdout_text, "socket"),
            "socket: PermissionError: codeact guard: import: socket is not allowed by the policy");
  EXPECT_EQ(Line(r.stdout_text, "ctypes"),
            "ctypes: PermissionError: codeact guard: import: ctypes is not allowed by the policy");
  EXPECT_EQ(Line(r.stdout_text, "from asyncio"),
            "from asyncio: PermissionError: codeact guard: import: asyncio.subprocess is not "
            "allowed by the policy");
  EXPECT_EQ(
      Line(r.stdout_text, "importlib"),
      "importlib: PermissionError: codeact guard: import: importlib is not allowed by the policy");
  // json and asyncio import re, selectors, socket and more of their own: not the user's imports.
  EXPECT_EQ(Line(r.stdout_text, "json"), "json: ok");
  EXPECT_EQ(Line(r.stdout_text, "asyncio"), "asyncio: ok");
}

// A pooled child started after a run gets that run's imports in its guard frame; the next run of
// the same policy names the frame instead of repeating them, and its import check is the frame's.
// A run of another policy sends its own, whatever the frame had.
TEST_P(RuntimeGuardTest, ARunNamesTheImportsSentAheadOnlyWhenTheyAreItsOwn) {
  if (!GetParam().pooled) GTEST_SKIP() << "a child started for its run has no guard frame";
  const std::string code = Attempts({{"socket", "__import__('socket')"},
                                     {"xml", "__import__('xml.dom.minidom')"},
                                     {"json", "__import__('json').dumps(1)"}});
  RunSnapshot plain;  // the default policy
  RunSnapshot with_xml;
  with_xml.policy.extra_allowed_imports.push_back("xml.*");
  const auto as_armed = [&] {
    return internal::GuardStatus(GuardedExecutor(GetParam())).requests_as_armed;
  };
  ASSERT_EQ(Run(code, plain).outcome, Outcome::kOk);  // the refill after it has its imports
  const std::int64_t before = as_armed();
  ExecutionResult r = Run(code, plain);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(as_armed(), before + 1);
  EXPECT_EQ(Line(r.stdout_text, "socket"),
            "socket: PermissionError: codeact guard: import: socket is not allowed by the policy");
  EXPECT_EQ(Line(r.stdout_text, "xml"),
            "xml: ModuleNotFoundError: No module named 'xml.dom.minidom'");
  EXPECT_EQ(Line(r.stdout_text, "json"), "json: ok");

  r = Run(code, with_xml);  // its child's frame has the default policy's imports
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(as_armed(), before + 1);
  EXPECT_EQ(Line(r.stdout_text, "xml"), "xml: ok");
  EXPECT_EQ(Line(r.stdout_text, "socket"),
            "socket: PermissionError: codeact guard: import: socket is not allowed by the policy");

  r = Run(code, with_xml);  // now the frame's are its own
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(as_armed(), before + 2);
  EXPECT_EQ(Line(r.stdout_text, "xml"), "xml: ok");
}

// The imports sent ahead are those of the latest run of the child's own key, which holds the
// tenant: a child of one caller never holds another's list, even when the other ran last. (The
// code reads what its runner kept: the validator, which refuses the runner's modules, is
// bypassed here, and b's policy lets it import them.)
TEST_P(RuntimeGuardTest, AChildGetsTheImportsOfItsOwnCallersRunsOnly) {
  if (!GetParam().pooled) GTEST_SKIP() << "a child started for its run has no guard frame";
  RunSnapshot a;
  a.tenant = "guard-test-a";
  a.policy.extra_allowed_imports.push_back("codeact_marker_of_a");
  RunSnapshot b;
  b.tenant = "guard-test-b";
  b.policy.extra_allowed_imports.push_back("runner_state");
  const std::string kept =
      "import runner_state\n"
      "ahead = runner_state.state.imports_ahead\n"
      "print(None if ahead is None else ('codeact_marker_of_a' in ahead, 'runner_state' in "
      "ahead))\n";
  ExecutionResult r = Run("pass", a);  // a's imports noted; b has not run yet
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  r = Run(kept, b);  // b's first child, started after a's run
  ASSERT_EQ(r.outcome, Outcome::kOk)
      << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
  EXPECT_EQ(r.stdout_text, "None\n");
  const std::int64_t before = internal::GuardStatus(GuardedExecutor(GetParam())).requests_as_armed;
  r = Run(kept, b);  // its refill has b's own list
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "(False, True)\n");
  EXPECT_EQ(internal::GuardStatus(GuardedExecutor(GetParam())).requests_as_armed, before + 1);
}

// The validator is bypassed here: a module the policy neither allows nor blocks is not available
// (ModuleNotFoundError, which the code's `except ImportError` fallback catches), while a blocked
// one stays a PermissionError that such a fallback does not catch.
TEST_P(RuntimeGuardTest, AModuleOffTheListIsNotFoundSoAFallbackRunsWhileABlockedOneIsRefused) {
  RunSnapshot s;  // the default policy
  const ExecutionResult r = Run(
      testing::Program(
          "runtime_guard/"
          "a_module_off_the_list_is_not_found_so_a_fallback_runs_while_a_blocked_one_is_refused"),
      s);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message << r.stderr_text;
  EXPECT_EQ(r.stdout_text,
            "numpy: ModuleNotFoundError No module named 'numpy'\n"
            "fallback: 6\n"
            "ctypes: PermissionError codeact guard: import: ctypes is not allowed by the policy\n");
}

TEST_P(RuntimeGuardTest, TheGuardCannotBeDisabledFromInside) {
  const ExecutionResult r =
      Run(std::string("import sys, builtins, os\n") +
          "def traceback():\n"
          "    try:\n"
          "        1 / 0\n"
          "    except ZeroDivisionError as e:\n"
          "        return e.__traceback__\n" +
          "seen = []\n" +
          Attempts({
              {"addaudithook", "sys.addaudithook(lambda event, args: seen.append(event))"},
              {"settrace", "sys.settrace(lambda *a: None)"},
              {"getframe", "sys._getframe(0)"},
              {"tb_frame", "traceback().tb_frame"},
          }) +
          // Replace the guarded __import__ (its original is out of reach) and load what is wanted
          // through the import system's finders instead: the Python layer is bypassed.
          "builtins.__import__ = lambda name, *a, **k: sys.modules[name]\n"
          "def load(name):\n"
          "    if name in sys.modules:\n"
          "        return sys.modules[name]\n"
          "    for finder in sys.meta_path:\n"
          "        spec = finder.find_spec(name, None)\n"
          "        if spec is not None:\n"
          "            module = spec.loader.create_module(spec)\n"
          "            spec.loader.exec_module(module)\n"
          "            return module\n"
          "print('hook events:', seen)\n"
          "fork_exec = load('_posixsubprocess').fork_exec\n"
          "r, w = os.pipe()\n" +
          Attempts({
              // No audit event on this path: the seccomp filter refuses the fork.
              {"fork_exec",
               "fork_exec([b'/bin/true'], [b'/bin/true'], True, (), None, None, -1, -1, -1, -1, "
               "-1, -1, r, "
               "w, False, False, -1, None, None, None, -1, None, False)"},
              // The audit hook passes this path; Landlock (or the sandbox) refuses it.
              {"read secret", "os.read(os.open(" + Py(secret_) + ", os.O_RDONLY), 100)"},
              {"guard again",
               "next(o for o in load('gc').get_objects() if type(o).__name__ == 'module' and "
               "o.__name__ == '_codeact_guard').arm({})"},
          }));
  ASSERT_EQ(r.outcome, Outcome::kOk)
      << r.message << r.stderr_text << (r.error ? r.error->traceback : "");
  // CPython drops an Exception a hook raises for sys.addaudithook, and does not add the hook.
  EXPECT_EQ(Line(r.stdout_text, "addaudithook"), "addaudithook: ok");
  EXPECT_EQ(Line(r.stdout_text, "hook events"), "hook events: []") << r.stdout_text;
  EXPECT_EQ(Line(r.stdout_text, "settrace"),
            "settrace: PermissionError: codeact guard: tracing: sys.settrace is not allowed");
  EXPECT_EQ(Line(r.stdout_text, "getframe"),
            "getframe: PermissionError: codeact guard: frame and code introspection: sys._getframe "
            "is not allowed");
  EXPECT_EQ(Line(r.stdout_text, "tb_frame"),
            "tb_frame: PermissionError: codeact guard: frame and code introspection: reading of "
            "tb_frame is not allowed");
  EXPECT_NE(
      Line(r.stdout_text, "fork_exec").find("PermissionError: [Errno 1] Operation not permitted"),
      std::string::npos)
      << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find(kSecret), std::string::npos) << r.stdout_text;
  EXPECT_NE(Line(r.stdout_text, "read secret")
                .find(GetParam().level == IsolationLevel::kNamespaces || !Landlock()
                          ? "Error"
                          : "PermissionError: [Errno 13]"),
            std::string::npos)
      << r.stdout_text;
  EXPECT_NE(Line(r.stdout_text, "guard again")
                .find("PermissionError: codeact guard: object graph: gc.get_objects"),
            std::string::npos)
      << r.stdout_text;
}

TEST_P(RuntimeGuardTest, AForgedTerminalFrameEndsTheRunAsABridgeError) {
  const ExecutionResult r = Run(
      "import os\n" + Attempts({{"open bridge", "open(4, 'wb')"}}) +
      "os.write(4, b'{\"type\":\"complete\",\"output_present\":true,\"output\":\"forged\"}\\n')\n"
      "'genuine'\n");
  EXPECT_EQ(r.outcome, Outcome::kError) << r.message;
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "BridgeError");
  EXPECT_NE(r.error->message.find("after its terminal frame"), std::string::npos)
      << r.error->message;
  EXPECT_FALSE(r.output_present);
  EXPECT_EQ(Line(r.stdout_text, "open bridge"),
            "open bridge: PermissionError: codeact guard: bridge: open of fd 4 (the host bridge) "
            "is not allowed");
}

// Said once, in the executor's environment notes, not in every result (issue 31).
TEST_P(RuntimeGuardTest, LandlockIsUsedWhereTheKernelHasItAndTheNotesSayWhenNot) {
  const ExecutionResult r = Run("print('ok')");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_EQ(r.message.find("Landlock"), std::string::npos) << r.message;
  std::string notes;
  for (const auto& note : internal::EnvironmentNotes(GuardedExecutor(GetParam())))
    notes += note + "\n";
  EXPECT_EQ(notes.find("without Landlock") != std::string::npos, !Landlock()) << notes;
}

INSTANTIATE_TEST_SUITE_P(Levels, RuntimeGuardTest,
                         ::testing::Values(Mode{IsolationLevel::kProcess, false},
                                           Mode{IsolationLevel::kProcess, true},
                                           Mode{IsolationLevel::kNamespaces, false},
                                           Mode{IsolationLevel::kNamespaces, true}),
                         ModeName);

// --- Not per mode.

TEST(RuntimeGuardOptionTest, OnByDefaultAndOffOnlyWhenAsked) {
  EXPECT_TRUE(ExecutorOptions{}.runtime_guard);
  EXPECT_TRUE(internal::GuardStatus(*testing::LocalExecutor()).armed);
  EXPECT_FALSE(internal::GuardStatus(*testing::UnguardedLocalExecutor()).armed);
  // Without it the process level is what it was: the code may fork (and the sweep cleans up).
  const ExecutionResult r = testing::UnguardedLocalExecutor()->Execute(
      {testing::Program("runtime_guard/on_by_default_and_off_only_when_asked")}, Snapshot());
  EXPECT_EQ(r.stdout_text, "forked\n") << r.message << r.stderr_text;
}

// A child that cannot arm the guard ends the run as setup_error naming why; nothing runs.
TEST(RuntimeGuardOptionTest, AGuardThatCannotBeArmedFailsTheRunInsteadOfRunningUnguarded) {
  auto dir = internal::TempDir::Create("codeact-guard-broken-");
  ASSERT_TRUE(dir.ok());
  const std::string broken = dir->path() + "/_codeact_guard.so";
  std::ofstream(broken) << "not a shared object";
  const std::string marker = dir->path() + "/ran.txt";
  ::setenv("CODEACT_GUARD_MODULE", broken.c_str(), 1);
  const auto cold = NewLocalExecutor(0);
  const auto pooled = NewLocalExecutor(1);
  ::unsetenv("CODEACT_GUARD_MODULE");
  for (Executor* executor : {cold.get(), pooled.get()}) {
    const ExecutionResult r =
        executor->Execute({"open(" + Py(marker) + ", 'w').write('ran')"}, Snapshot());
    EXPECT_EQ(r.outcome, Outcome::kSetupError) << r.message << r.stderr_text;
    EXPECT_NE(r.message.find("codeact guard: cannot load " + broken), std::string::npos)
        << r.message;
    EXPECT_FALSE(fs::exists(marker));
  }
}

}  // namespace
}  // namespace codeact
