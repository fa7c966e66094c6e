// Helpers shared by the integration tests: a local executor, snapshots, fixtures, process and
// fd accounting.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backends/local/local_executor.hpp"
#include "codeact/executor.hpp"
#include "process/run_cgroup.hpp"
#include "testing/fixtures.hpp"

extern char** environ;

namespace codeact::testing {

// This process's environment with TMPDIR set to `tmpdir` (for a child program the test starts).
inline std::vector<std::string> EnvironmentWithTmpdir(const std::string& tmpdir) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).rfind("TMPDIR=", 0) != 0) env.emplace_back(*e);
  }
  env.push_back("TMPDIR=" + tmpdir);
  return env;
}

// A local executor with the given warm pool (0: every run starts its own child). The process
// level is the default of these tests: they check host-side behaviour (pids, paths, the fork
// server) that the namespaces level hides on purpose.
// `runtime_guard` false: for the tests of what lies beneath the guard (the cleanup of forked
// processes, the fd layout seen through /proc, the launcher's own filter), which the guard would
// stop before it gets there. `accept_weaker_limits`: see ExecutorOptions.
inline std::unique_ptr<Executor> NewLocalExecutor(int pool_size,
                                                  std::int64_t pool_idle_timeout_ms = 60'000,
                                                  bool fork_server = true,
                                                  IsolationLevel level = IsolationLevel::kProcess,
                                                  bool runtime_guard = true,
                                                  bool accept_weaker_limits = false) {
  ExecutorOptions options;
  options.warm_pool_size = pool_size;
  options.pool_idle_timeout_ms = pool_idle_timeout_ms;
  options.fork_server = fork_server;
  options.isolation = level;
  options.runtime_guard = runtime_guard;
  options.accept_weaker_limits = accept_weaker_limits;
  auto e = CreateExecutor(options);
  if (!e.ok()) throw std::runtime_error(e.status().ToString());
  return std::move(*e);
}

// The shared executors of the tests that exercise a run's own behaviour, one per level: cold
// starts, so that every run is the reference the pooled runs are compared with
// (warm_pool_test.cpp).
inline std::shared_ptr<Executor> LocalExecutor(IsolationLevel level = IsolationLevel::kProcess) {
  if (level == IsolationLevel::kNamespaces) {
    static std::shared_ptr<Executor> sandboxed = NewLocalExecutor(0, 60'000, true, level);
    return sandboxed;
  }
  static std::shared_ptr<Executor> executor = NewLocalExecutor(0);
  return executor;
}

// The same without the runtime guard (see NewLocalExecutor), accepting rlimit bounds where no
// cgroup can be made (a non-root host), so that the tests of forked processes may set
// max_processes there too.
inline std::shared_ptr<Executor> UnguardedLocalExecutor(
    IsolationLevel level = IsolationLevel::kProcess) {
  if (level == IsolationLevel::kNamespaces) {
    static std::shared_ptr<Executor> sandboxed =
        NewLocalExecutor(0, 60'000, true, level, false, /*accept_weaker_limits=*/true);
    return sandboxed;
  }
  static std::shared_ptr<Executor> executor = NewLocalExecutor(
      0, 60'000, true, IsolationLevel::kProcess, false, /*accept_weaker_limits=*/true);
  return executor;
}

// The tests run without the validator, and the runtime guard's import check lets them import
// what the limit fixtures use besides the default list: they test the executor, not the policy
// (runtime_guard_test.cpp tests the import check under the default policy).
inline RunSnapshot Snapshot(ExecutionLimits limits = {}) {
  RunSnapshot s;
  s.limits = limits;
  s.policy.extra_allowed_imports = {"signal", "atexit", "sys", "builtins", "resource"};
  return s;
}

inline int CountOpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

inline bool ProcessAlive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// Waits (with a generous deadline) until none of `pids` is alive; returns those still alive.
inline std::set<pid_t> WaitAllDead(const std::set<pid_t>& pids,
                                   std::chrono::seconds deadline = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  std::set<pid_t> alive = pids;
  while (!alive.empty() && std::chrono::steady_clock::now() < end) {
    for (auto it = alive.begin(); it != alive.end();)
      it = ProcessAlive(*it) ? std::next(it) : alive.erase(it);
    if (!alive.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return alive;
}

// Our children that are zombies (not yet reaped).
inline int CountZombieChildren() {
  int zombies = 0;
  const std::string self = std::to_string(getpid());
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
      std::string line;
      std::getline(stat, line);
      const auto close = line.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 2));
      std::string state, ppid;
      rest >> state >> ppid;
      if (state == "Z" && ppid == self) ++zombies;
    }
    closedir(d);
  }
  return zombies;
}

// Polls `done` until it holds or the deadline passes; for state that settles asynchronously
// (children are reaped and their directories removed off the caller's path).
template <typename Pred>
bool Eventually(Pred done, std::chrono::seconds deadline = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Points TMPDIR at a fresh directory under the current temp directory for its lifetime, then
// puts the previous value back (a test run by an unprivileged user keeps its private TMPDIR).
class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()))) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    std::filesystem::create_directories(path_);
    setenv("TMPDIR", path_.c_str(), 1);
  }
  ~ScopedTmpdir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (old_)
      setenv("TMPDIR", old_->c_str(), 1);
    else
      unsetenv("TMPDIR");
  }
  ScopedTmpdir(const ScopedTmpdir&) = delete;
  ScopedTmpdir& operator=(const ScopedTmpdir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<std::string> old_;
};

// Whether a run with `limits` is refused up front here by the guarded executors (LocalExecutor):
// it sets memory_bytes, runs get no memory cgroup, and the kernel has no Landlock (which, with
// the guard's seccomp filter, makes RLIMIT_AS a bound: local_executor.cpp, MemoryBound). An
// explicit max_processes is always bounded under the guard (ProcessBound).
inline bool ExplicitLimitsRefusedHere(const ExecutionLimits& limits) {
  const ExecutionLimits defaults;
  const auto site = internal::CgroupSite::ForThisProcess();
  return limits.memory_bytes != defaults.memory_bytes && !site->memory() &&
         internal::GuardStatus(*LocalExecutor()).landlock_abi < 1;
}

inline int CountTempRunDirs() {
  int n = 0;
  const char* tmp = std::getenv("TMPDIR");
  if (DIR* d = opendir(tmp && *tmp ? tmp : "/tmp")) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind("codeact-run-", 0) == 0) ++n;
    }
    closedir(d);
  }
  return n;
}

}  // namespace codeact::testing
