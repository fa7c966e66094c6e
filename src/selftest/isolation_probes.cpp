#include "selftest/isolation_probes.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "backends/executor_introspection.hpp"
#include "codeact/json.hpp"
#include "common/data_dir.hpp"
#include "common/status_macros.hpp"
#include "files/bounded_read.hpp"
#include "files/mount_capture.hpp"
#include "os/errno_status.hpp"
#include "os/unique_fd.hpp"
#include "process/run_cgroup.hpp"

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
  std::string rw_host;      // mounted read-write
  std::string rw_seen;      // the read-write mount as the code must name it
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
    text += " (" + r.error->type +
            (r.error->message.empty() ? "" : ": " + Short(r.error->message)) + ")";
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
    // A process that exits meanwhile fails the read (ESRCH): it holds nothing then.
    const auto cmdline =
        ReadBoundedFile(std::string("/proc/") + e->d_name + "/cmdline", 1 << 20, "command line");
    if (cmdline.ok() && Contains(*cmdline, needle)) {
      found.insert(static_cast<pid_t>(std::atoi(e->d_name)));
    }
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

// What the `process` level promises for a probe (the `namespaces` level contains every one but
// kNowhereYet, and kContainsWithMemoryCgroup only with that cgroup).
enum class ProcessLevel {
  kContains,                  // on its own
  kContainsWithGuard,         // with the runtime guard (its seccomp filter and audit hook)
  kContainsWithLandlock,      // with the runtime guard where the kernel has Landlock
  kContainsOnRootHost,        // on a root host: each run's own uid and private mount namespace
  kContainsWithMemoryCgroup,  // at both levels, where the run's memory cgroup can be made
  kContainsWithGuardOrMemoryCgroup,  // at both levels, with the runtime guard or that cgroup
  kNowhereYet,                       // no level promises it yet (README, known limitations)
  // Only the namespaces level hides it: the process level shares the host's file tree and pid
  // namespace for metadata (docs/threat-model-metadata.md), and says "not contained".
  kHiddenOnlyByNamespaces,
};

std::vector<std::string> SplitNul(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = line.find('\0', start);
    fields.push_back(
        line.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return fields;
    start = end + 1;
  }
}

struct Probe {
  const char* name;
  ProcessLevel process_level;
  const char* program;  // resources/selftest/<program>.py, run after FixturePrelude
  std::function<void(ExecutionLimits&)> limits;
  std::function<Verdict(const ExecutionResult&, Fixture&)> judge;
};

// Whether `entry` appears in `text` whole: between line or NUL boundaries (one entry of an
// environment listing or of a /proc/PID/environ file).
bool HasWholeEntry(const std::string& text, const std::string& entry) {
  const auto boundary = [](char c) { return c == '\n' || c == '\0'; };
  for (auto at = text.find(entry); at != std::string::npos; at = text.find(entry, at + 1)) {
    const std::size_t end = at + entry.size();
    if ((at == 0 || boundary(text[at - 1])) && (end == text.size() || boundary(text[end])))
      return true;
  }
  return false;
}

// The name of a host environment variable whose whole "NAME=value" appears in `text`, or "".
// The executor sets LANG and CODEACT_* itself; short values prove nothing.
std::string HostVariableIn(const std::string& text) {
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq == std::string::npos || entry.size() - eq < 5 || entry.rfind("LANG=", 0) == 0 ||
        entry.rfind("CODEACT_", 0) == 0) {
      continue;
    }
    if (HasWholeEntry(text, entry)) return entry.substr(0, eq);
  }
  return "";
}

Verdict ByOutcome(const ExecutionResult& r, Outcome expected) {
  return {r.outcome == expected,
          OutcomeText(r) + " after " + std::to_string(r.duration_ms) + " ms"};
}

// Contained unless the program printed `marker`, which means it did `what`.
std::function<Verdict(const ExecutionResult&, Fixture&)> ContainedUnlessPrinted(std::string marker,
                                                                                std::string what) {
  return [marker, what](const ExecutionResult& r, Fixture&) -> Verdict {
    if (Contains(r.stdout_text, marker)) return {false, what};
    return {true, OutcomeText(r)};
  };
}

// What the code can reach: files, the environment, the network.
std::vector<Probe> ReachProbes() {
  return {
      {"read /etc/passwd", ProcessLevel::kContainsWithLandlock, "read_etc_passwd", nullptr,
       ContainedUnlessPrinted("root:", "read it (root:...)")},
      {"list /", ProcessLevel::kContainsWithLandlock, "list_root", nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         // The runtime guard's Landlock refuses to list / at all.
         if (r.outcome == Outcome::kError && r.error && r.error->type == "PermissionError") {
           return {true, OutcomeText(r)};
         }
         const ProbeVerdict v = JudgeRootListing(r.stdout_text, r.outcome == Outcome::kOk, "/");
         return {v.contained, v.observed};
       }},
      {"read a host environment secret", ProcessLevel::kContains,
       // One "NAME=value" line per variable: a host variable shows as its whole entry (a name the
       // executor sets itself, TMPDIR under the guard, has another value).
       "read_host_environment", nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (const std::string name = HostVariableIn(r.stdout_text); !name.empty()) {
           return {false, "sees the host's " + name};
         }
         return {r.outcome == Outcome::kOk, "environment holds only what the host passed"};
       }},
      {"write outside the working directory and mounts", ProcessLevel::kContainsWithLandlock,
       "write_outside", nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         std::error_code ec;
         if (fs::exists(f.escape_file, ec)) return {false, "created " + f.escape_file};
         return {true, OutcomeText(r)};
       }},
      {"follow a planted symlink out of a mount", ProcessLevel::kContainsWithLandlock,
       "follow_planted_symlink", nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         if (Contains(r.stdout_text, f.secret))
           return {false, "read the host file behind the link"};
         return {true, OutcomeText(r)};
       }},
      {"connect to a local TCP port", ProcessLevel::kContainsWithGuard, "connect_local_port",
       nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         pollfd p{f.listener.get(), POLLIN, 0};
         const bool pending = ::poll(&p, 1, 0) > 0;
         if (Contains(r.stdout_text, "connected") || pending)
           return {false, "connected to the host's port"};
         return {true, OutcomeText(r)};
       }},
  };
}

// What the code can see of other processes and of files it cannot open.
std::vector<Probe> VisibilityProbes() {
  return {
      {"see host processes", ProcessLevel::kContainsWithLandlock, "see_host_processes", nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (r.outcome != Outcome::kOk)
           return {true, OutcomeText(r)};  // /proc out of reach (the runtime guard)
         const int seen = std::atoi(r.stdout_text.c_str());
         return {seen < 8, std::to_string(seen) + " processes visible"};
       }},
      // Metadata: stat needs no Landlock right, so at the process level a path's existence,
      // size, owner and mode stay visible, and so do the host's pids.
      {"stat a private file outside the mounts", ProcessLevel::kHiddenOnlyByNamespaces,
       "stat_private_file", nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (Contains(r.stdout_text, "size ")) return {false, "stat shows " + Short(r.stdout_text)};
         return {true, OutcomeText(r) + ": " + Short(r.stdout_text)};
       }},
      {"see a host process at /proc/PID", ProcessLevel::kHiddenOnlyByNamespaces, "see_host_pid",
       nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (Contains(r.stdout_text, "exists"))
           return {false, "/proc/" + std::to_string(::getpid()) + " (the host) exists"};
         return {true, OutcomeText(r) + ": " + Short(r.stdout_text)};
       }},
      {"read another process's CPU clock", ProcessLevel::kHiddenOnlyByNamespaces, "read_cpu_clock",
       nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (Contains(r.stdout_text, "cpu ")) return {false, "read the host's CPU time"};
         return {true, OutcomeText(r) + ": " + Short(r.stdout_text)};
       }},
  };
}

// The run's limits, and what outlives the run.
std::vector<Probe> LimitProbes() {
  return {
      {"allocate past the memory limit", ProcessLevel::kContains, "allocate_past_memory",
       [](ExecutionLimits& l) { l.memory_bytes = 256LL << 20; },
       [](const ExecutionResult& r, Fixture&) { return ByOutcome(r, Outcome::kMemoryLimit); }},
      {"spin past the CPU limit", ProcessLevel::kContains, "spin_past_cpu",
       [](ExecutionLimits& l) { l.cpu_time_s = 1; },
       [](const ExecutionResult& r, Fixture&) { return ByOutcome(r, Outcome::kCpuLimit); }},
      {"sleep past the wall clock", ProcessLevel::kContains, "sleep_past_wall_clock",
       [](ExecutionLimits& l) { l.wall_timeout_ms = 1000; },
       [](const ExecutionResult& r, Fixture&) { return ByOutcome(r, Outcome::kTimeout); }},
      {"print past the output cap", ProcessLevel::kContains, "print_past_output_cap",
       [](ExecutionLimits& l) { l.max_stdout_bytes = 64 << 10; },
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         return {r.stdout_truncated && r.stdout_text.size() <= (64u << 10),
                 std::to_string(r.stdout_text.size()) + " bytes kept" +
                     (r.stdout_truncated ? ", truncated" : "")};
       }},
      {"fork repeatedly", ProcessLevel::kContainsWithGuard, "fork_repeatedly",
       [](ExecutionLimits& l) { l.max_processes = 32; },
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         std::string last = Short(r.stdout_text);
         last = last.substr(last.rfind(' ') == std::string::npos ? 0 : last.rfind(' ') + 1);
         const int forks = std::atoi(last.c_str());
         return {r.outcome == Outcome::kOk && forks < 200,
                 std::to_string(forks) + " forks before a limit"};
       }},
      {"spawn a daemon that outlives the run", ProcessLevel::kContains, "spawn_daemon", nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         if (!Contains(r.stdout_text, "started"))
           return {true, "no daemon started: " + OutcomeText(r)};
         if (!WaitNoProcessWith(f.marker, std::chrono::seconds(5)))
           return {false, "the daemon is still running"};
         return {true, "the daemon died with the run"};
       }},
  };
}

// The host-level attacks: each would act on the host itself if it were not contained, so each
// is written to change nothing even then (the same value written back, the same mode set).
// These would change the host: a kernel setting, a setuid file, a private file's mode, another
// process's limits.
std::vector<Probe> HostChangeProbes() {
  return {
      {"write a /proc/sys setting", ProcessLevel::kContains, "write_proc_sys", nullptr,
       ContainedUnlessPrinted("written", "wrote a host kernel setting")},
      {"plant a setuid file through a mount", ProcessLevel::kContainsWithGuard, "plant_setuid_file",
       nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         struct stat st {};
         if (::lstat((f.rw_host + "/suid").c_str(), &st) == 0 &&
             (st.st_mode & (S_ISUID | S_ISGID)) != 0) {
           return {false, "left a setuid file owned by uid " + std::to_string(st.st_uid)};
         }
         return {true, OutcomeText(r)};
       }},
      {"make a private file outside the mounts readable", ProcessLevel::kContainsWithGuard,
       "chmod_private_file", nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         struct stat st {};
         if (::stat(f.secret_file.c_str(), &st) == 0 && (st.st_mode & 0777) != 0600)
           return {false, "changed its mode to " + std::to_string(st.st_mode & 0777)};
         return {true, OutcomeText(r)};
       }},
      {"change another process's limits or priority", ProcessLevel::kContainsWithGuard,
       "change_other_process", nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (!Contains(r.stdout_text, "changed:")) return {true, OutcomeText(r)};
         const std::string done = Short(r.stdout_text);
         return {done == "changed:", done == "changed:" ? "every call refused" : done};
       }},
  };
}

// More host-level attacks (as above): these would expose the host — a world-writable file left
// in a mount, a device node's mode, the host's environment.
std::vector<Probe> HostExposureProbes() {
  return {
      {"leave a world-writable file in a mount", ProcessLevel::kContainsWithGuard,
       "leave_world_writable", nullptr,
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         for (const char* name : {"/ww", "/wwd"}) {
           struct stat st {};
           if (::lstat((f.rw_host + name).c_str(), &st) == 0 && (st.st_mode & S_IWOTH) != 0)
             return {false, std::string("left ") + name + " writable for others"};
         }
         return {true, OutcomeText(r)};
       }},
      {"chmod a device node", ProcessLevel::kContains, "chmod_device_node", nullptr,
       ContainedUnlessPrinted("changed", "may change the host's /dev/null")},
      {"read the host's environment through /proc", ProcessLevel::kContainsWithLandlock,
       "read_proc_environ", nullptr,
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         if (std::string seen = HostVariableIn(r.stdout_text); !seen.empty())
           return {false, "read the host's " + seen};
         return {true, OutcomeText(r)};
       }},
  };
}

// Memory outside the heap, the disk, the result's size, and a wall clock the code tries to
// outrun or ignore.
std::vector<Probe> ExhaustionProbes() {
  return {
      {"hold memory in memfds", ProcessLevel::kContainsWithGuardOrMemoryCgroup, "hold_memfd_memory",
       [](ExecutionLimits& l) { l.memory_bytes = 256LL << 20; },
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         return {!Contains(r.stdout_text, "held"), OutcomeText(r)};
       }},
      {"hold memory in /dev/shm", ProcessLevel::kContainsWithLandlock, "hold_dev_shm_memory",
       [](ExecutionLimits& l) { l.memory_bytes = 256LL << 20; },
       [](const ExecutionResult& r, Fixture& f) -> Verdict {
         std::error_code ec;
         fs::remove("/dev/shm/" + f.marker, ec);
         return {!Contains(r.stdout_text, "held"), OutcomeText(r)};
       }},
      {"fill the working directory", ProcessLevel::kContains, "fill_working_directory",
       [](ExecutionLimits& l) { l.memory_bytes = 2LL << 30; },
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         return {!Contains(r.stdout_text, "1536 MiB"),
                 OutcomeText(r) + ": " + Short(r.stdout_text)};
       }},
      {"capture thousands of long-path files", ProcessLevel::kContains, "capture_long_paths",
       [](ExecutionLimits& l) { l.wall_timeout_ms = 60'000; },
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         const std::size_t size = ToJson(r).size();
         return {size < (16u << 20), std::to_string(r.files.size()) + " files, result " +
                                         std::to_string(size >> 10) + " KiB"};
       }},
      {"outrun the wall clock with a setsid fork storm", ProcessLevel::kContainsWithGuard,
       "setsid_fork_storm",
       [](ExecutionLimits& l) {
         l.wall_timeout_ms = 2000;
         l.max_processes = 1024;
       },
       [](const ExecutionResult& r, Fixture&) -> Verdict {
         return {r.outcome == Outcome::kTimeout && r.duration_ms <= 3000,
                 OutcomeText(r) + " after " + std::to_string(r.duration_ms) + " ms"};
       }},
      {"ignore SIGTERM", ProcessLevel::kContains, "ignore_sigterm",
       [](ExecutionLimits& l) { l.wall_timeout_ms = 1000; },
       [](const ExecutionResult& r, Fixture&) { return ByOutcome(r, Outcome::kTimeout); }},
  };
}

// Every probe, in the order the selftest reports them.
const std::vector<Probe>& Probes() {
  static const std::vector<Probe> probes = [] {
    std::vector<Probe> all;
    for (auto group : {ReachProbes, VisibilityProbes, LimitProbes, HostChangeProbes,
                       HostExposureProbes, ExhaustionProbes}) {
      std::vector<Probe> some = group();
      all.insert(all.end(), std::make_move_iterator(some.begin()),
                 std::make_move_iterator(some.end()));
    }
    return all;
  }();
  return probes;
}

StatusOr<Fixture> MakeFixture(const std::string& root, bool sandboxed) {
  // At the process level the mounts keep their host paths: a root host's run uid must pass the
  // directory above them (docs/threat-model.md, identity and mounts); `outside` stays closed to it.
  if (::chmod(root.c_str(), 0711) != 0) return ErrnoStatus("chmod " + root, errno);
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
  if (::chmod(f.secret_file.c_str(), 0600) != 0)
    return ErrnoStatus("chmod " + f.secret_file, errno);
  fs::create_symlink(f.secret_file, f.mount_host + "/link", ec);
  if (ec) return Internal("cannot plant the probe symlink: " + ec.message());
  f.mount_seen = sandboxed ? "/data" : f.mount_host;
  f.rw_host = root + "/rw";
  fs::create_directories(f.rw_host, ec);
  if (ec) return Internal("cannot create the probe fixtures: " + ec.message());
  f.rw_seen = sandboxed ? "/out" : f.rw_host;
  f.escape_file = f.outside + "/escape.txt";
  f.marker = "codeact-selftest-daemon-" + RandomHex();

  f.listener = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (!f.listener ||
      ::bind(f.listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(f.listener.get(), 8) != 0 ||
      ::getsockname(f.listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoStatus("listen on 127.0.0.1", errno);
  }
  f.port = ntohs(addr.sin_port);
  return f;
}

// The fixture as the Python constants the probe programs use, ahead of each program (the
// programs are files of the data dir: they know the fixture only by these names).
std::string FixturePrelude(const Fixture& f) {
  return "ESCAPE_FILE = " + Py(f.escape_file) + "\nSECRET_FILE = " + Py(f.secret_file) +
         "\nMOUNT_SEEN = " + Py(f.mount_seen) + "\nRW_SEEN = " + Py(f.rw_seen) +
         "\nMARKER = " + Py(f.marker) + "\nPORT = " + std::to_string(f.port) +
         "\nHOST_PID = " + std::to_string(::getpid()) + "\n";
}

// The probe's program, resources/selftest/<program>.py of the data dir (common/data_dir.hpp).
StatusOr<std::string> ProbeProgram(const Probe& probe) {
  return ReadBoundedFile(DefaultDataDir() + "/resources/selftest/" + probe.program + ".py",
                         64 << 10, "the selftest program");
}

ProbeReport Run(Executor& executor, const Probe& probe, const std::string& program, Fixture& f) {
  RunSnapshot s;
  s.limits.wall_timeout_ms = 10'000;
  s.limits.cpu_time_s = 5;
  s.limits.max_stdout_bytes = 64 << 10;
  if (probe.limits) probe.limits(s.limits);
  s.mounts.push_back({f.mount_host, "/data", MountMode::kReadOnly, 1 << 20});
  s.mounts.push_back({f.rw_host, "/out", MountMode::kReadWrite, 1 << 20});
  // The probes test the isolation level, not the policy: the runtime guard's import check lets
  // them import what they use, so that what stops them is the level's own.
  s.policy.extra_allowed_imports = {"socket", "signal", "sys", "resource"};
  const auto start = std::chrono::steady_clock::now();
  ExecutionResult r = executor.Execute(ExecutionRequest{FixturePrelude(f) + program}, s);
  // No provider stamps these runs: the probes' verdicts read the wall-clock time measured here.
  r.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  ProbeReport report;
  report.name = probe.name;
  const RuntimeGuardStatus guard = GuardStatus(executor);
  const std::shared_ptr<const CgroupSite> cgroups = CgroupSite::ForThisProcess();
  report.promised = [&] {
    switch (probe.process_level) {
      case ProcessLevel::kNowhereYet:
        return false;
      case ProcessLevel::kHiddenOnlyByNamespaces:
        return executor.isolation() == IsolationLevel::kNamespaces;
      case ProcessLevel::kContainsWithMemoryCgroup:
        return cgroups->memory();
      case ProcessLevel::kContainsWithGuardOrMemoryCgroup:
        return cgroups->memory() || guard.armed;
      default:
        break;
    }
    if (executor.isolation() == IsolationLevel::kNamespaces) return true;
    // The run's pids cgroup bounds a fork loop at the process level too, where one can be made.
    if (std::string(probe.name) == "fork repeatedly" && cgroups->pids()) return true;
    switch (probe.process_level) {
      case ProcessLevel::kContains:
        return true;
      case ProcessLevel::kContainsOnRootHost:
        return ::geteuid() == 0;
      case ProcessLevel::kContainsWithGuard:
        return guard.armed;
      case ProcessLevel::kContainsWithLandlock:
        return guard.armed && guard.landlock_abi > 0;
      default:
        return false;
    }
  }();
  if (r.outcome == Outcome::kSetupError) {
    // A limit this host cannot enforce (no cgroup) is refused up front: nothing ran, so the
    // attack gained nothing; any other setup failure is a level that does not work.
    report.contained = r.message.find("needs a cgroup") != std::string::npos;
    report.observed = (report.contained ? "refused before running: " : "did not run: ") + r.message;
    return report;
  }
  Verdict v = probe.judge(r, f);
  report.contained = v.contained;
  report.observed = v.observed;
  return report;
}

}  // namespace

ProbeVerdict JudgeRootListing(const std::string& child_stdout, bool ran_ok,
                              const std::string& host_root) {
  // Entries of a host's / that the sandbox shows of its own (its skeleton and the system paths).
  static const std::set<std::string> skeleton = {"bin",   "dev",    "etc",  "lib",  "lib32",
                                                 "lib64", "libx32", "opt",  "proc", "sbin",
                                                 "tmp",   "usr",    "work", "data"};
  std::string interpreter;
  std::vector<std::string> top;
  std::map<std::string, std::set<std::string>>
      inside;  // readable directories of / and their entries
  std::istringstream lines(child_stdout);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f = SplitNul(line);
    if (f.size() >= 2 && f[0] == "exe") interpreter = f[1];
    if (f.size() >= 2 && (f[0] == "dir" || f[0] == "other")) top.push_back(f[1]);
    if (f.size() >= 2 && f[0] == "dir")
      inside[f[1]] = std::set<std::string>(f.begin() + 2, f.end());
  }
  // An interpreter outside the system paths is shown with its whole installation, read-only at
  // the same path (SandboxPlan): the directories on the way there exist inside, holding only the
  // next step of that path. They are the sandbox's own, not the host's.
  std::vector<std::string>
      way;  // "/root/.pyenv/versions/3.11.9/bin/python" -> root, .pyenv, versions, 3.11.9
  for (const auto& part : fs::path(interpreter).parent_path().parent_path()) {
    if (part != "/" && !part.empty()) way.push_back(part.string());
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(host_root, ec)) {
    const std::string name = e.path().filename().string();
    if (skeleton.count(name) || std::find(top.begin(), top.end(), name) == top.end()) continue;
    if (!way.empty() && name == way.front()) {
      auto seen = inside.find(name);
      // The installation itself (a prefix right under /), or a directory holding only the next
      // step.
      const bool only_the_way =
          way.size() == 1 || seen == inside.end() ||
          (seen->second.size() <= 1 && (seen->second.empty() || *seen->second.begin() == way[1]));
      if (only_the_way) continue;
    }
    return {false, "sees the host's /" + name};
  }
  std::string listed = "[";
  for (const auto& name : top) listed += (listed.size() > 1 ? ", '" : "'") + name + "'";
  return {ran_ok, "sees " + Short(listed + "]")};
}

std::vector<std::string> IsolationProbeNames() {
  std::vector<std::string> names;
  for (const auto& p : Probes()) names.emplace_back(p.name);
  return names;
}

StatusOr<ProbeReport> RunIsolationProbe(Executor& executor, const std::string& name) {
  for (const auto& p : Probes()) {
    if (name != p.name) continue;
    CODEACT_ASSIGN_OR_RETURN(std::string program, ProbeProgram(p));
    CODEACT_ASSIGN_OR_RETURN(TempDir root, TempDir::Create("codeact-selftest-"));
    CODEACT_ASSIGN_OR_RETURN(
        Fixture fixture,
        MakeFixture(root.path(), executor.isolation() == IsolationLevel::kNamespaces));
    return Run(executor, p, program, fixture);
  }
  return NotFound("no probe named \"" + name + "\"");
}

StatusOr<std::vector<ProbeReport>> RunIsolationProbes(Executor& executor) {
  std::vector<ProbeReport> reports;
  for (const auto& name : IsolationProbeNames()) {
    CODEACT_ASSIGN_OR_RETURN(ProbeReport report, RunIsolationProbe(executor, name));
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace codeact::internal
