#include "bench/cpu_time.hpp"

#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "os/proc_stat.hpp"

namespace codeact::bench {
namespace {

struct ProcCpu {
  pid_t ppid = 0;
  std::uint64_t self_ticks = 0;      // utime + stime
  std::uint64_t children_ticks = 0;  // cutime + cstime
};

// Every live process's parent and CPU ticks (a process that exits while the scan runs is left
// out; its parent's cutime takes it once reaped).
std::map<pid_t, ProcCpu> ScanProc() {
  std::map<pid_t, ProcCpu> all;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return all;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto ppid = internal::ProcStatNumber(stat, 4);
    const auto utime = internal::ProcStatNumber(stat, 14);
    const auto stime = internal::ProcStatNumber(stat, 15);
    // cutime and cstime are signed in proc(5), never negative in practice.
    const auto cutime = internal::ProcStatNumber(stat, 16);
    const auto cstime = internal::ProcStatNumber(stat, 17);
    if (!ppid || !utime || !stime || !cutime || !cstime) continue;
    all[static_cast<pid_t>(pid)] = {static_cast<pid_t>(*ppid), *utime + *stime, *cutime + *cstime};
  }
  ::closedir(proc);
  return all;
}

}  // namespace

CpuSeconds ProcessTreeCpu(pid_t root) {
  const std::map<pid_t, ProcCpu> all = ScanProc();
  const auto it = all.find(root);
  if (it == all.end()) return {};
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, p] : all) children.emplace(p.ppid, pid);
  std::uint64_t descendants = it->second.children_ticks;
  std::vector<pid_t> queue = {root};
  while (!queue.empty()) {
    const pid_t parent = queue.back();
    queue.pop_back();
    const auto [first, last] = children.equal_range(parent);
    for (auto c = first; c != last; ++c) {
      const ProcCpu& p = all.at(c->second);
      descendants += p.self_ticks + p.children_ticks;
      queue.push_back(c->second);
    }
  }
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return {static_cast<double>(it->second.self_ticks) / tick,
          static_cast<double>(descendants) / tick};
}

MachineCpu MachineCpuNow() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  // user nice system idle iowait irq softirq steal (proc(5)), in clock ticks
  std::uint64_t t[8] = {};
  if (!(in >> cpu) || cpu != "cpu") return {};
  for (std::uint64_t& v : t) {
    if (!(in >> v)) return {};
  }
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const std::uint64_t busy = t[0] + t[1] + t[2] + t[5] + t[6];
  return {static_cast<double>(busy) / tick, static_cast<double>(busy + t[3] + t[4] + t[7]) / tick};
}

double ReapedChildrenCpu() {
  rusage u{};
  if (::getrusage(RUSAGE_CHILDREN, &u) != 0) return 0;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

void AdoptOrphans(bool adopt) { (void)::prctl(PR_SET_CHILD_SUBREAPER, adopt ? 1 : 0, 0, 0, 0); }

void ReapOrphans(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == ECHILD) return;                                   // none left
    if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // one still exiting
  }
}

}  // namespace codeact::bench
