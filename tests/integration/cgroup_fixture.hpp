// What the cgroup tests share (cgroup_test.cpp, cgroup_v2_test.cpp): the executor's notes, and
// the processes a run left behind, found through /proc.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "backends/local/local_executor.hpp"
#include "codeact/executor.hpp"
#include "process/child.hpp"
#include "testing/test_support.hpp"

namespace codeact::testing {

// The executor's environment notes, one a line.
inline std::string Notes(const Executor& executor) {
  std::string out;
  for (const auto& note : internal::EnvironmentNotes(executor)) out += note + "\n";
  return out;
}

inline bool NamespacesAvailable() {
  static const bool available = [] {
    ExecutorOptions options;
    options.isolation = IsolationLevel::kNamespaces;
    options.warm_pool_size = 0;
    return CreateExecutor(options).ok();
  }();
  return available;
}

inline std::string RandomMarker() {
  std::random_device rd;
  return "codeact-cgroup-test-" + std::to_string(rd()) + std::to_string(rd());
}

// Live (non-zombie) processes whose environment holds `entry`.
inline std::set<pid_t> ProcessesWithEnv(const std::string& entry) {
  std::set<pid_t> found;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = ReadFile("/proc/" + name + "/environ");
    if (env.find(entry) != std::string::npos && ProcessAlive(std::stoi(name)))
      found.insert(std::stoi(name));
  }
  return found;
}

// Whether `pid` has SIGKILL pending (or is gone): it will never run user code again.
inline bool SigkillPending(pid_t pid) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  for (const char* field : {"\nSigPnd:\t", "\nShdPnd:\t"}) {
    const auto at = status.find(field);
    if (at == std::string::npos) return true;
    const unsigned long long mask =
        std::stoull(status.substr(at + std::strlen(field), 16), nullptr, 16);
    if (mask & (1ULL << (SIGKILL - 1))) return true;
  }
  return status.empty();
}

// Whether `pid` will never run user code again: SIGKILL pending, or already exiting (the kernel
// took the signal off the pending set and is tearing the process down: PF_EXITING, 0x4, in the
// flags of /proc/<pid>/stat), or gone.
inline bool Dying(pid_t pid) {
  if (SigkillPending(pid)) return true;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return true;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i < 9; ++i) rest >> field;  // state, ppid, pgrp, session, tty_nr, tpgid
  unsigned long flags = 0;
  rest >> flags;
  return (flags & 0x4) != 0;
}

// The pid of a process that has ended and been reaped: an owner that is gone. -1 if none started.
inline pid_t ReapedPid() {
  internal::LaunchSpec probe;
  probe.executable = "/bin/true";
  probe.bridge = false;
  auto gone = internal::Child::Start(probe);
  if (!gone.ok()) return -1;
  (*gone)->Wait();
  return (*gone)->pid();
}

}  // namespace codeact::testing
