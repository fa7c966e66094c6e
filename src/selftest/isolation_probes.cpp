#include "selftest/isolation_probes.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "backends/local/local_executor.hpp"
#include "files/mount_capture.hpp"
#include "process/posix_util.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Host-side fixtures of one probe run.
struct Fixture {
  std::string outside;      // a host directory the code is given no access to
  std::string secret_file;  // outside/secret.txt
  std::string secret;       // its content, random
  std::string mount_host;   // mounted read-only; holds `link` -> secret_file
  std::string mount_seen;   // the mount as the code must name it at this level
  std::string escape_file;  // outside/escape.txt, which the code tries to create
  std::string marker;       // random, in the command line of a daemon the code starts
  UniqueFd listener;        // 127.0.0.1:port, listening
  int port = 0;
};

std::string RandomHex() {
  std::random_device rd;
  std::ostringstream out;
  out << std::hex << rd() << rd();
  return out.str();
}

// A Python string literal for one of our own paths or tokens.
std::string Py(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string Short(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

std::string OutcomeText(const ExecutionResult& r) {
  std::string text = std::string(OutcomeName(r.outcome));
  if (r.outcome == Outcome::kError && r.error) {
    text += " (" + r.error->type + (r.error->message.empty() ? "" : ": " + Short(r.error->message)) + ")";
  }
  return text;
}

// Pids whose command line holds `needle` (a daemon the code started).
std::set<pid_t> ProcessesWith(const std::string& needle) {
  std::set<pid_t> found;
  DIR* d = opendir("/proc");
  if (d == nullptr) return found;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (Contains(cmdline, needle)) found.insert(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  closedir(d);
  return found;
}

bool WaitNoProcessWith(const std::string& needle, std::chrono::seconds deadline) {
  const auto end = Clock::now() + deadline;
  while (!ProcessesWith(needle).empty()) {
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

struct Verdict {
  bool contained;
  std::string observed;
};

// What the `process` level promises for a probe (the `namespaces` level contains every one).
enum class ProcessLevel {
  kContains,              // on its own
  kContainsWithGuard,     // with the runtime guard (its seccomp filter and audit hook)
  kContainsWithLandlock,  // with the runtime guard where the kernel has Landlock
};

struct Probe {
  const char* name;
  ProcessLevel process_level;
  std::function<std::string(const Fixture&)> code;
  std::function<void(ExecutionLimits&)> limits;
  std::function<Verdict(const ExecutionResult&, Fixture&)> judge;
};

Verdict ByOutcome(const ExecutionResult& r, Outcome expected) {
  return {r.outcome == expected, OutcomeText(r) + " after " + std::to_string(r.duration_ms) + " ms"};
}

const std::vector<Probe>& Probes() {
  static const std::vector<Probe> probes = {
      {"read /etc/passwd", ProcessLevel::kContainsWithLandlock, [](const Fixture&) { return "print(open('/etc/passwd').read())"; }, nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (Contains(r.stdout_text, "root:")) return {false, "read it (root:...)"};
         return {true, OutcomeText(r)};
       }},
      {"list /", ProcessLevel::kContainsWithLandlock, [](const Fixture&) { return "import os\nprint(sorted(os.listdir('/')))"; }, nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         // Host entries that the sandbox never shows.
         static const std::set<std::string> skeleton = {"bin", "dev", "etc",  "lib", "lib32", "lib64", "libx32",
                                                        "opt", "proc", "sbin", "tmp", "usr", "work",  "data"};
         std::error_code ec;
         for (const auto& e : fs::directory_iterator("/", ec)) {
           const std::string name = e.path().filename().string();
           if (!skeleton.count(name) && Contains(r.stdout_text, "'" + name + "'")) {
             return {false, "sees the host's /" + name};
           }
         }
         // The runtime guard's Landlock refuses to list / at all.
         if (r.outcome == Outcome::kError && r.error && r.error->type == "PermissionError") {
           return {true, OutcomeText(r)};
         }
         return {r.outcome == Outcome::kOk, "sees " + Short(r.stdout_text)};
       }},
      {"read a host environment secret", ProcessLevel::kContains,
       [](const Fixture&) { return "import os, json\nprint(json.dumps(dict(os.environ)))"; }, nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         for (char** e = environ; *e != nullptr; ++e) {
           const std::string entry = *e;
           const auto eq = entry.find('=');
           // The executor sets LANG and CODEACT_* itself; anything else came from the host.
           if (eq == std::string::npos || entry.substr(eq + 1).size() < 4 || entry.rfind("LANG=", 0) == 0 ||
               entry.rfind("CODEACT_", 0) == 0) {
             continue;
           }
           if (Contains(r.stdout_text, "\"" + entry.substr(0, eq) + "\": ")) {
             return {false, "sees the host's " + entry.substr(0, eq)};
           }
         }
         return {r.outcome == Outcome::kOk, "environment holds only what the host passed"};
       }},
      {"write outside the working directory and mounts", ProcessLevel::kContainsWithLandlock,
       [](const Fixture& f) { return "open(" + Py(f.escape_file) + ", 'w').write('escaped')"; }, nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         std::error_code ec;
         if (fs::exists(f.escape_file, ec)) return {false, "created " + f.escape_file};
         return {true, OutcomeText(r)};
       }},
      {"follow a planted symlink out of a mount", ProcessLevel::kContainsWithLandlock,
       [](const Fixture& f) { return "print(open(" + Py(f.mount_seen + "/link") + ").read())"; }, nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         if (Contains(r.stdout_text, f.secret)) return {false, "read the host file behind the link"};
         return {true, OutcomeText(r)};
       }},
      {"connect to a local TCP port", ProcessLevel::kContainsWithGuard,
       [](const Fixture& f) {
         return "import socket\nsocket.create_connection(('127.0.0.1', " + std::to_string(f.port) +
                "), timeout=2)\nprint('connected')";
       },
       nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         pollfd p{f.listener.get(), POLLIN, 0};
         const bool pending = ::poll(&p, 1, 0) > 0;
         if (Contains(r.stdout_text, "connected") || pending) return {false, "connected to the host's port"};
         return {true, OutcomeText(r)};
       }},
      {"see host processes", ProcessLevel::kContainsWithLandlock,
       [](const Fixture&) { return "import os\nprint(sum(1 for p in os.listdir('/proc') if p.isdigit()))"; },
       nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (r.outcome != Outcome::kOk) return {true, OutcomeText(r)};  // /proc out of reach (the runtime guard)
         const int seen = std::atoi(r.stdout_text.c_str());
         return {seen < 8, std::to_string(seen) + " processes visible"};
       }},
      {"allocate past the memory limit", ProcessLevel::kContains, [](const Fixture&) { return "x = bytearray(512 * 1024 * 1024)"; },
       [](ExecutionLimits& l) { l.memory_bytes = 256LL << 20; },
       [](const ExecutionResult& r, Fixture&) { return ByOutcome(r, Outcome::kMemoryLimit); }},
      {"spin past the CPU limit", ProcessLevel::kContains, [](const Fixture&) { return "while True:\n    pass"; },
       [](ExecutionLimits& l) { l.cpu_time_s = 1; },
       [](const ExecutionResult& r, Fixture&) { return ByOutcome(r, Outcome::kCpuLimit); }},
      {"sleep past the wall clock", ProcessLevel::kContains, [](const Fixture&) { return "import time\ntime.sleep(60)"; },
       [](ExecutionLimits& l) { l.wall_timeout_ms = 1000; },
       [](const ExecutionResult& r, Fixture&) { return ByOutcome(r, Outcome::kTimeout); }},
      {"print past the output cap", ProcessLevel::kContains, [](const Fixture&) { return "print('x' * (1 << 20))"; },
       [](ExecutionLimits& l) { l.max_stdout_bytes = 64 << 10; },
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         return {r.stdout_truncated && r.stdout_text.size() <= (64u << 10),
                 std::to_string(r.stdout_text.size()) + " bytes kept" + (r.stdout_truncated ? ", truncated" : "")};
       }},
      {"fork repeatedly", ProcessLevel::kContainsWithGuard,
       [](const Fixture&) {
         return "import os, time\nn = 0\ntry:\n    while n < 200:\n        if os.fork() == 0:\n"
                "            time.sleep(30)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n"
                "    print(type(e).__name__)\nprint(n)";
       },
       [](ExecutionLimits& l) { l.max_processes = 32; },
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         std::string last = Short(r.stdout_text);
         last = last.substr(last.rfind(' ') == std::string::npos ? 0 : last.rfind(' ') + 1);
         const int forks = std::atoi(last.c_str());
         return {r.outcome == Outcome::kOk && forks < 200, std::to_string(forks) + " forks before a limit"};
       }},
      {"spawn a daemon that outlives the run", ProcessLevel::kContains,
       [](const Fixture& f) {
         return "import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                "        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', " +
                Py(f.marker) + "])\n    os._exit(0)\nos.wait()\nimport time\ntime.sleep(0.3)\nprint('started')";
       },
       nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         if (!Contains(r.stdout_text, "started")) return {true, "no daemon started: " + OutcomeText(r)};
         if (!WaitNoProcessWith(f.marker, std::chrono::seconds(5))) return {false, "the daemon is still running"};
         return {true, "the daemon died with the run"};
       }},
      {"ignore SIGTERM", ProcessLevel::kContains,
       [](const Fixture&) {
         return "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)";
       },
       [](ExecutionLimits& l) { l.wall_timeout_ms = 1000; },
       [](const ExecutionResult& r, Fixture&) { return ByOutcome(r, Outcome::kTimeout); }},
  };
  return probes;
}

StatusOr<Fixture> MakeFixture(const std::string& root, bool sandboxed) {
  Fixture f;
  f.outside = root + "/outside";
  f.mount_host = root + "/mount";
  std::error_code ec;
  fs::create_directories(f.outside, ec);
  fs::create_directories(f.mount_host, ec);
  if (ec) return Internal("cannot create the probe fixtures: " + ec.message());
  f.secret = "codeact-selftest-secret-" + RandomHex();
  f.secret_file = f.outside + "/secret.txt";
  std::ofstream(f.secret_file) << f.secret;
  fs::create_symlink(f.secret_file, f.mount_host + "/link", ec);
  if (ec) return Internal("cannot plant the probe symlink: " + ec.message());
  f.mount_seen = sandboxed ? "/data" : f.mount_host;
  f.escape_file = f.outside + "/escape.txt";
  f.marker = "codeact-selftest-daemon-" + RandomHex();

  f.listener = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (!f.listener || ::bind(f.listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(f.listener.get(), 8) != 0 ||
      ::getsockname(f.listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoStatus("listen on 127.0.0.1", errno);
  }
  f.port = ntohs(addr.sin_port);
  return f;
}

ProbeReport Run(Executor& executor, const Probe& probe, Fixture& f) {
  RunSnapshot s;
  s.limits.wall_timeout_ms = 10'000;
  s.limits.cpu_time_s = 5;
  s.limits.memory_bytes = 512LL << 20;
  s.limits.max_stdout_bytes = 64 << 10;
  if (probe.limits) probe.limits(s.limits);
  s.mounts.push_back({f.mount_host, "/data", MountMode::kReadOnly, 1 << 20});
  // The probes test the isolation level, not the policy: the runtime guard's import check lets
  // them import what they use, so that what stops them is the level's own.
  s.policy.extra_allowed_imports = {"socket", "signal", "sys"};
  const ExecutionResult r = executor.Execute(ExecutionRequest{probe.code(f)}, s);
  ProbeReport report;
  report.name = probe.name;
  const RuntimeGuardStatus guard = GuardStatus(executor);
  report.promised = executor.isolation() == IsolationLevel::kNamespaces ||
                    probe.process_level == ProcessLevel::kContains ||
                    (guard.armed && probe.process_level == ProcessLevel::kContainsWithGuard) ||
                    (guard.armed && guard.landlock_abi > 0 && probe.process_level == ProcessLevel::kContainsWithLandlock);
  if (r.outcome == Outcome::kSetupError) {
    report.contained = false;
    report.observed = "did not run: " + r.message;
    return report;
  }
  Verdict v = probe.judge(r, f);
  report.contained = v.contained;
  report.observed = v.observed;
  return report;
}

}  // namespace

std::vector<std::string> IsolationProbeNames() {
  std::vector<std::string> names;
  for (const auto& p : Probes()) names.emplace_back(p.name);
  return names;
}

StatusOr<ProbeReport> RunIsolationProbe(Executor& executor, const std::string& name) {
  for (const auto& p : Probes()) {
    if (name != p.name) continue;
    auto root = TempDir::Create("codeact-selftest-");
    if (!root.ok()) return root.status();
    auto fixture = MakeFixture(root->path(), executor.isolation() == IsolationLevel::kNamespaces);
    if (!fixture.ok()) return fixture.status();
    return Run(executor, p, *fixture);
  }
  return NotFound("no probe named \"" + name + "\"");
}

StatusOr<std::vector<ProbeReport>> RunIsolationProbes(Executor& executor) {
  std::vector<ProbeReport> reports;
  for (const auto& name : IsolationProbeNames()) {
    auto report = RunIsolationProbe(executor, name);
    if (!report.ok()) return report.status();
    reports.push_back(std::move(*report));
  }
  return reports;
}

}  // namespace codeact::internal
