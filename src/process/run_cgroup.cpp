#include "process/run_cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "os/errno_status.hpp"
#include "os/pipe_io.hpp"
#include "os/proc_stat.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;
using H = CgroupSite::Hierarchy;

// A kill that takes longer than this has met a process stuck in the kernel; the caller goes on.
constexpr std::chrono::seconds kKillDeadline{5};
constexpr std::chrono::seconds kRemoveDeadline{1};
// Thousands of killed interpreters take seconds to exit on a loaded machine.
constexpr std::chrono::seconds kEmptyDeadline{20};

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// The whole of a (small, kernel-generated) file; nullopt when it cannot be read.
std::optional<std::string> ReadText(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  return ReadToEnd(fd.get());
}

// The whole of a small kernel file from its start, read through an fd opened earlier.
std::optional<std::string> ReadTextAt(int fd) {
  char buf[4096];
  ssize_t n;
  do {
    n = ::pread(fd, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

std::optional<std::int64_t> ParseNumber(const std::optional<std::string>& text) {
  if (!text || text->empty() || (*text)[0] < '0' || (*text)[0] > '9') return std::nullopt;
  return std::strtoll(text->c_str(), nullptr, 10);
}

// 0, or the errno of the failed open or write.
int WriteText(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return errno;
  return 0;
}

Status Write(const std::string& path, const std::string& text) {
  if (int err = WriteText(path, text); err != 0)
    return ErrnoStatus("write " + text + " to " + path, err);
  return Status::Ok();
}

// The value of `key` in a "key value" per line file (memory.events, cpu.stat, memory.oom_control).
std::optional<std::int64_t> KeyedValueOf(const std::optional<std::string>& text,
                                         const std::string& key) {
  if (!text) return std::nullopt;
  std::size_t at = 0;
  while (at < text->size()) {
    const std::size_t end = std::min(text->find('\n', at), text->size());
    if (text->compare(at, key.size(), key) == 0 && at + key.size() < end &&
        (*text)[at + key.size()] == ' ') {
      return std::strtoll(text->c_str() + at + key.size() + 1, nullptr, 10);
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<std::int64_t> KeyedValue(const std::string& path, const std::string& key) {
  return KeyedValueOf(ReadText(path), key);
}

bool HasWord(const std::string& list, const std::string& word) {
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t end = list.find_first_of(" \n,", at);
    if (end == std::string::npos) end = list.size();
    if (list.compare(at, end - at, word) == 0 && end - at == word.size()) return true;
    at = end + 1;
  }
  return false;
}

std::string Trimmed(const std::string& text) {
  const std::size_t begin = text.find_first_not_of(" \n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \n") - begin + 1);
}

// One line of /proc/self/cgroup, "<id>:<controllers>:<path>": "4:memory:/..." for a v1
// hierarchy, "0::/..." for the v2 group.
struct SelfCgroupLine {
  std::string id;
  std::string controllers;
  std::string path;
};

std::vector<SelfCgroupLine> SelfCgroupLines() {
  const std::string text = ReadText("/proc/self/cgroup").value_or("");
  std::vector<SelfCgroupLine> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::size_t first = text.find(':', at);
    const std::size_t second = first < end ? text.find(':', first + 1) : std::string::npos;
    if (second < end) {
      lines.push_back({text.substr(at, first - at), text.substr(first + 1, second - first - 1),
                       text.substr(second + 1, end - second - 1)});
    }
    at = end + 1;
  }
  return lines;
}

// Whether this process is in a cgroup v1 hierarchy holding `controller`: the kernel then offers
// it to no cgroup v2 group (a hybrid host).
bool BoundToV1(const std::string& controller) {
  for (const SelfCgroupLine& line : SelfCgroupLines()) {
    if (HasWord(line.controllers, controller)) return true;
  }
  return false;
}

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or nullopt when gone.
std::optional<std::string> StartTime(const std::string& pid) {
  auto stat = ReadText("/proc/" + pid + "/stat");
  if (!stat) return std::nullopt;
  const std::optional<std::string_view> start = ProcStatField(*stat, 22);
  if (!start) return std::nullopt;
  return std::string(*start);
}

// "<pid>-<start time>-<n>", all decimal: a run group of this module's making.
bool ParseRunGroupName(const std::string& name, std::string& pid, std::string& start) {
  const std::size_t a = name.find('-');
  const std::size_t b = a == std::string::npos ? a : name.find('-', a + 1);
  if (b == std::string::npos || name.find('-', b + 1) != std::string::npos) return false;
  if (a == 0 || b == a + 1 || b + 1 == name.size()) return false;
  if (name.find_first_not_of("0123456789-") != std::string::npos) return false;
  pid = name.substr(0, a);
  start = name.substr(a + 1, b - a - 1);
  return true;
}

// The v1 hierarchy under `root` that holds `controller`: a directory named after it, or a
// co-mount naming it ("cpu,cpuacct"). Its real path, or empty.
std::string FindV1Hierarchy(const std::string& root, const std::string& controller) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(root.c_str())) {
    while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return (a == controller) > (b == controller);  // the exact name first
  });
  for (const auto& name : names) {
    if (name == "." || name == ".." || !HasWord(name, controller)) continue;
    const std::string dir = root + "/" + name;
    if (!Exists(dir + "/cgroup.procs")) continue;
    char real[PATH_MAX];
    return ::realpath(dir.c_str(), real) != nullptr ? std::string(real) : dir;
  }
  return "";
}

struct V1Controller {
  const char* name;
  bool H::*flag;
};
constexpr V1Controller kV1Controllers[] = {
    {"pids", &H::pids}, {"memory", &H::memory}, {"cpu", &H::cpu}, {"cpuacct", &H::cpuacct}};

CgroupSite DiscoverV1(const std::string& root, uid_t uid) {
  CgroupSite site;
  if (DIR* d = ::opendir(root.c_str())) {
    ::closedir(d);
  } else {
    site.missing = "no cgroup hierarchy is mounted at " + root + ": " + ErrnoText(errno);
    return site;
  }
  std::vector<std::string> problems;
  const std::string subtree = CgroupSubtreeName(uid);
  for (const auto& c : kV1Controllers) {
    const std::string hierarchy = FindV1Hierarchy(root, c.name);
    if (hierarchy.empty()) {
      problems.push_back(std::string("no ") + c.name + " hierarchy under " + root);
      continue;
    }
    const std::string dir = hierarchy + "/" + subtree;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      problems.push_back(
          errno == EACCES && uid != 0
              ? dir + " does not exist (run `codeact setup-cgroups --user NAME` once as root)"
              : "cannot create " + dir + ": " + ErrnoText(errno));
      continue;
    }
    if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
      problems.push_back(dir + " is not writable by uid " + std::to_string(uid) +
                         " (run `codeact setup-cgroups --user NAME` once as root)");
      continue;
    }
    auto same = std::find_if(site.hierarchies.begin(), site.hierarchies.end(),
                             [&](const H& h) { return h.dir == dir; });
    H& h = same != site.hierarchies.end() ? *same : site.hierarchies.emplace_back();
    h.dir = dir;
    h.*c.flag = true;
    if (c.flag == &H::memory) site.swap_accounted = Exists(dir + "/memory.memsw.limit_in_bytes");
  }
  if (site.hierarchies.empty() && problems.size() == std::size(kV1Controllers) &&
      std::all_of(problems.begin(), problems.end(),
                  [](const std::string& p) { return p.rfind("no ", 0) == 0; })) {
    site.missing = "no cgroup hierarchy (pids, memory, cpu, cpuacct) is mounted at " + root;
    return site;
  }
  for (const auto& p : problems) site.missing += (site.missing.empty() ? "" : "; ") + p;
  return site;
}

CgroupSite DiscoverV2(const std::string& root, uid_t uid, const std::string& self_v2_path) {
  CgroupSite site;
  std::string parent = root;
  if (uid != 0) {
    // Moving a process needs write access to the cgroup.procs of the common ancestor of where it
    // is and where it goes: only a subtree systemd delegated to the user, which the host itself
    // runs in, gives that.
    const std::string unit = "/user@" + std::to_string(uid) + ".service";
    std::size_t at = self_v2_path.find(unit + "/");
    if (at == std::string::npos && self_v2_path.size() >= unit.size() &&
        self_v2_path.compare(self_v2_path.size() - unit.size(), unit.size(), unit) == 0) {
      at = self_v2_path.size() - unit.size();
    }
    if (at == std::string::npos) {
      site.missing = "cgroup v2 without a delegated subtree: the host does not run inside user@" +
                     std::to_string(uid) +
                     ".service (start it with `systemd-run --user --scope ...`)";
      return site;
    }
    parent = root + self_v2_path.substr(0, at + unit.size());
  }
  const std::string dir = parent + "/codeact";
  // Controllers reach a group through its parent's subtree_control; neither `parent` (the root
  // cgroup, or a delegated unit whose processes live in leaves) nor `dir` holds processes.
  // Why a controller did not reach `dir`, by controller: the reason a caller is told.
  std::map<std::string, std::string> why_not;
  const std::string offered = ReadText(parent + "/cgroup.controllers").value_or("");
  auto enable = [&](const std::string& at, const std::string& c) {
    if (HasWord(ReadText(at + "/cgroup.subtree_control").value_or(""), c)) return;
    if (int err = WriteText(at + "/cgroup.subtree_control", "+" + c); err != 0)
      why_not.emplace(c,
                      "enabling it in " + at + "/cgroup.subtree_control failed: " + ErrnoText(err));
  };
  for (const char* c : {"pids", "memory", "cpu"}) {
    if (!HasWord(offered, c)) {
      why_not.emplace(c, "it is not offered by " + parent + " (cgroup.controllers: \"" +
                             Trimmed(offered) + "\")" +
                             (BoundToV1(c) ? ", as it is bound to a cgroup v1 hierarchy" : ""));
    } else {
      enable(parent, c);
    }
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    site.missing = "cannot create " + dir + ": " + ErrnoText(errno);
    return site;
  }
  for (const char* c : {"pids", "memory", "cpu"}) {
    if (HasWord(ReadText(dir + "/cgroup.controllers").value_or(""), c)) enable(dir, c);
  }
  const std::string enabled = ReadText(dir + "/cgroup.subtree_control").value_or("");
  H h;
  h.dir = dir;
  h.v2 = true;
  h.pids = HasWord(enabled, "pids");
  h.memory = HasWord(enabled, "memory");
  h.cpu = HasWord(enabled, "cpu");
  h.kill = Exists(dir + "/cgroup.kill");
  h.cpuacct = true;  // cpu.stat's usage_usec needs no controller
  site.swap_accounted = Exists(dir + "/memory.swap.max");
  for (const auto& [c, held] :
       {std::pair<const char*, bool>{"pids", h.pids}, {"memory", h.memory}}) {
    if (held) continue;
    auto why = why_not.find(c);
    site.missing += (site.missing.empty() ? "" : "; ") + std::string("the ") + c +
                    " controller is not available in " + dir +
                    (why != why_not.end() ? ": " + why->second : std::string());
  }
  site.hierarchies.push_back(std::move(h));
  return site;
}

std::string SelfV2Path() {
  for (const SelfCgroupLine& line : SelfCgroupLines()) {
    if (line.id == "0" && line.controllers.empty()) return line.path;
  }
  return "";
}

std::vector<pid_t> ReadPids(const std::string& procs_file) {
  std::vector<pid_t> pids;
  const std::string text = ReadText(procs_file).value_or("");
  const char* p = text.c_str();
  while (*p != '\0') {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p) break;
    if (v > 0) pids.push_back(static_cast<pid_t>(v));
    p = end;
    while (*p == '\n') ++p;
  }
  return pids;
}

// Waits, with a short backoff, until `done` holds or `deadline`; returns `done()`.
template <typename Pred>
bool PollUntil(Pred done, Clock::time_point deadline) {
  auto pause = std::chrono::microseconds(50);
  while (!done()) {
    if (Clock::now() >= deadline) return done();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
  return true;
}

}  // namespace

bool CgroupSite::pids() const {
  return std::any_of(hierarchies.begin(), hierarchies.end(), [](const H& h) { return h.pids; });
}

bool CgroupSite::memory() const {
  return std::any_of(hierarchies.begin(), hierarchies.end(), [](const H& h) { return h.memory; });
}

std::string CgroupSubtreeName(uid_t uid) {
  return uid == 0 ? "codeact" : "codeact-" + std::to_string(uid);
}

CgroupSite CgroupSite::Discover(const std::string& root, uid_t uid,
                                const std::string& self_v2_path) {
  if (Exists(root + "/cgroup.controllers")) return DiscoverV2(root, uid, self_v2_path);
  return DiscoverV1(root, uid);
}

std::shared_ptr<const CgroupSite> CgroupSite::ForThisProcess() {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const CgroupSite>> sites;
  const char* env = std::getenv("CODEACT_CGROUP_ROOT");
  const std::string root = env != nullptr && *env != '\0' ? env : "/sys/fs/cgroup";
  std::lock_guard lock(mu);
  auto& site = sites[root];
  if (!site) {
    auto found = std::make_shared<CgroupSite>(Discover(root, ::geteuid(), SelfV2Path()));
    RemoveStaleRunGroups(*found);
    site = std::move(found);
  }
  return site;
}

int RemoveStaleRunGroups(const CgroupSite& site) {
  // A sessions' parent group (session_cgroups.hpp) holds the sessions' own groups, and a v1 session
  // has a group in the freezer hierarchy as well (`<root>/freezer/<subtree>/<name>`), frozen
  // perhaps: those are thawed first (a frozen process cannot die), the nested groups killed and
  // removed before their parent, and the freezer groups removed last.
  auto remove_nested = [&site](const std::string& parent) {
    CgroupSite inner = site;
    std::set<std::string> nested;
    std::set<std::string> freezers;
    for (H& h : inner.hierarchies) {
      if (!h.v2) {
        const std::string subtree = h.dir.substr(h.dir.rfind('/') + 1);
        const std::string controller_dir = h.dir.substr(0, h.dir.rfind('/'));
        freezers.insert(controller_dir.substr(0, controller_dir.rfind('/')) + "/freezer/" +
                        subtree);
      }
      h.dir += "/" + parent;
      DIR* d = ::opendir(h.dir.c_str());
      if (d == nullptr) continue;
      while (dirent* e = ::readdir(d)) {
        std::string pid, start;
        if (ParseRunGroupName(e->d_name, pid, start)) nested.insert(e->d_name);
      }
      ::closedir(d);
    }
    if (nested.empty()) return;
    for (const auto& name : nested) {
      for (const auto& f : freezers) WriteText(f + "/" + name + "/freezer.state", "THAWED");
    }
    {
      auto shared = std::make_shared<const CgroupSite>(std::move(inner));
      for (const auto& name : nested) RunCgroup doomed(shared, name);
    }
    for (const auto& name : nested) {
      for (const auto& f : freezers) ::rmdir((f + "/" + name).c_str());
    }
  };
  std::set<std::string> stale;
  for (const H& h : site.hierarchies) {
    DIR* d = ::opendir(h.dir.c_str());
    if (d == nullptr) continue;
    while (dirent* e = ::readdir(d)) {
      std::string pid, start;
      if (!ParseRunGroupName(e->d_name, pid, start)) continue;
      if (StartTime(pid) != start)
        stale.insert(e->d_name);  // the owner is gone, or its pid is reused
    }
    ::closedir(d);
  }
  auto shared = std::make_shared<const CgroupSite>(site);
  for (const auto& name : stale) {
    remove_nested(name);
    RunCgroup doomed(shared, name);  // its destructor kills and removes
  }
  return static_cast<int>(stale.size());
}

StatusOr<std::vector<std::string>> SetUpUserCgroups(const std::string& root, uid_t uid, gid_t gid) {
  if (::geteuid() != 0) return PermissionDenied("setting up cgroups for a user needs root");
  if (Exists(root + "/cgroup.controllers")) {
    return FailedPrecondition(
        "cgroup v2 at " + root +
        ": nothing to set up; a user's runs go under the subtree systemd delegates to it "
        "(user@UID.service), when codeact runs inside it (e.g. `systemd-run --user --scope codeact "
        "...`)");
  }
  std::vector<std::string> made;
  for (const auto& c : kV1Controllers) {
    const std::string hierarchy = FindV1Hierarchy(root, c.name);
    if (hierarchy.empty()) continue;
    const std::string dir = hierarchy + "/" + CgroupSubtreeName(uid);
    if (std::find(made.begin(), made.end(), dir) != made.end()) continue;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return ErrnoStatus("mkdir " + dir, errno);
    // The user makes its run groups in `dir` and moves its processes in through the subtree's
    // own cgroup.procs and tasks; the subtree's limits stay root's.
    for (const std::string& path : {dir, dir + "/cgroup.procs", dir + "/tasks"}) {
      if (::chown(path.c_str(), uid, gid) != 0) return ErrnoStatus("chown " + path, errno);
    }
    made.push_back(dir);
  }
  if (made.empty())
    return Unavailable("no cgroup v1 hierarchy (pids, memory, cpu, cpuacct) under " + root);
  return made;
}

RunCgroup::RunCgroup(std::shared_ptr<const CgroupSite> site, std::string name)
    : site_(std::move(site)), name_(std::move(name)) {
  for (const H& h : site_->hierarchies) {
    procs_files_.push_back(Dir(h) + "/cgroup.procs");
    join_files_.push_back(Dir(h) + (h.v2 ? "/cgroup.procs" : "/tasks"));
  }
}

StatusOr<std::unique_ptr<RunCgroup>> RunCgroup::Create(std::shared_ptr<const CgroupSite> site,
                                                       const Limits& limits) {
  if (!site || !site->any()) {
    return Unavailable(site && !site->missing.empty() ? site->missing
                                                      : "no cgroup can be made here");
  }
  static const std::string owner =
      std::to_string(::getpid()) + "-" + StartTime("self").value_or("0");
  static std::atomic<std::uint64_t> counter{0};
  std::unique_ptr<RunCgroup> group(
      new RunCgroup(std::move(site), owner + "-" + std::to_string(++counter)));
  // On a failure below, the destructor removes whatever was made.
  for (const H& h : group->site_->hierarchies) {
    const std::string dir = group->Dir(h);
    if (::mkdir(dir.c_str(), 0755) != 0) return ErrnoStatus("mkdir " + dir, errno);
    if (h.pids) {
      if (Status s = Write(dir + "/pids.max", std::to_string(limits.max_processes)); !s.ok())
        return s;
    }
    if (!h.memory) continue;
    const std::string bytes = std::to_string(limits.memory_bytes);
    if (h.v2) {
      if (Status s = Write(dir + "/memory.max", bytes); !s.ok()) return s;
      if (group->site_->swap_accounted) {
        if (Status s = Write(dir + "/memory.swap.max", "0"); !s.ok()) return s;
      }
      WriteText(dir + "/memory.oom.group", "1");  // an OOM kill takes the whole run (4.19+)
    } else {
      if (Status s = Write(dir + "/memory.limit_in_bytes", bytes); !s.ok()) return s;
      // memory+swap at the same limit: no swap. Without swap accounting, swappiness 0 keeps the
      // group's anonymous memory out of swap except under host-wide pressure.
      if (Status s = group->site_->swap_accounted
                         ? Write(dir + "/memory.memsw.limit_in_bytes", bytes)
                         : Write(dir + "/memory.swappiness", "0");
          !s.ok()) {
        return s;
      }
    }
  }
  group->OpenUsageFiles();
  return group;
}

// Opened with the group, while it waits for its run: a read at the run's end is then a pread,
// without the path walks through the cgroup file system (~0.1 ms a run here). A file that cannot
// be opened is read by its path at the end, as before.
void RunCgroup::OpenUsageFiles() {
  auto open = [](const std::string& path) {
    return UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  };
  if (const H* h = With(&H::cpuacct)) {
    cpu_usage_fd_ = open(Dir(*h) + (h->v2 ? "/cpu.stat" : "/cpuacct.usage"));
  }
  if (const H* h = With(&H::memory)) {
    peak_memory_fd_ = open(Dir(*h) + (h->v2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
  }
}

RunCgroup::~RunCgroup() {
  // A process that a fork made as its parent was being killed can join the group a moment after
  // a pass read it: kill until the group is empty.
  const auto give_up = Clock::now() + kEmptyDeadline;
  while (!(KillAll() && WaitUntilEmpty(std::chrono::milliseconds(100))) && Clock::now() < give_up) {
  }
  cpu_usage_fd_.reset();  // no open file of the group outlives it
  peak_memory_fd_.reset();
  for (const H& h : site_->hierarchies) {
    const std::string dir = Dir(h);
    const auto end = Clock::now() + kRemoveDeadline;
    while (::rmdir(dir.c_str()) != 0 && errno == EBUSY && Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

Status RunCgroup::Join(pid_t pid) const {
  for (const auto& file : procs_files_) {
    if (Status s = Write(file, std::to_string(pid)); !s.ok()) return s;
  }
  return Status::Ok();
}

const H* RunCgroup::With(bool H::*controller) const {
  for (const H& h : site_->hierarchies) {
    if (h.*controller) return &h;
  }
  return nullptr;
}

std::vector<pid_t> RunCgroup::Pids() const {
  if (procs_files_.empty()) return {};
  return ReadPids(procs_files_.front());
}

bool RunCgroup::KillAll() {
  std::lock_guard lock(kill_mu_);
  if (site_->hierarchies.empty() || Pids().empty()) return true;
  if (const H* h = With(&H::kill)) {
    // One write kills the whole group, forks in flight included.
    if (WriteText(Dir(*h) + "/cgroup.kill", "1") == 0) return true;
  }
  // Done once every process of the group has SIGKILL pending: none of them can fork any more (the
  // kernel fails a fork whose parent has a fatal signal pending) or return to user space. That is
  // so after a pass that lists no process the earlier passes had not signalled. The exits
  // themselves (seconds, for a thousand forked interpreters) are not waited for: WaitUntilEmpty.
  // (Freezing the group first, as the v1 freezer allows, was measured and dropped: with 1000
  // processes in a fork storm, FROZEN took over 200 ms and THAWED another 200 ms per pass.)
  const auto deadline = Clock::now() + kKillDeadline;
  std::set<pid_t> signalled;
  while (true) {
    bool found_new = false;
    for (pid_t pid : Pids()) {
      KillMember(pid);
      found_new = signalled.insert(pid).second || found_new;
    }
    if (!found_new) return true;
    if (Clock::now() >= deadline) return false;
  }
}

void RunCgroup::KillMember(pid_t pid) const {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ENOSYS) ::kill(pid, SIGKILL);  // before 5.3: the pid was listed a moment ago
    return;                                     // ESRCH: gone already
  }
  // The pidfd holds on to the process the pid named when it was opened: if that one is in this
  // group, it is signalled, never another process that got the pid after it exited.
  const std::string cgroups = ReadText("/proc/" + std::to_string(pid) + "/cgroup").value_or("");
  if (cgroups.find("/" + name_ + "\n") != std::string::npos)
    ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
  ::close(fd);
}

bool RunCgroup::WaitUntilEmpty(std::chrono::milliseconds timeout) const {
  return PollUntil([&] { return Pids().empty(); }, Clock::now() + timeout);
}

CgroupUsage RunCgroup::Usage() const {
  CgroupUsage usage;
  auto read = [this](const UniqueFd& fd, const H& h, const char* file) {
    return fd ? ReadTextAt(fd.get()) : ReadText(Dir(h) + file);
  };
  if (const H* h = With(&H::cpuacct)) {
    if (h->v2) {
      if (auto us = KeyedValueOf(read(cpu_usage_fd_, *h, "/cpu.stat"), "usage_usec"))
        usage.cpu_ms = *us / 1000;
    } else if (auto ns = ParseNumber(read(cpu_usage_fd_, *h, "/cpuacct.usage"))) {
      usage.cpu_ms = *ns / 1'000'000;
    }
  }
  if (const H* h = With(&H::memory)) {
    usage.peak_memory_bytes = ParseNumber(
        read(peak_memory_fd_, *h, h->v2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
  }
  return usage;
}

std::int64_t RunCgroup::OomKills() const {
  const H* h = With(&H::memory);
  if (h == nullptr) return 0;
  return KeyedValue(Dir(*h) + (h->v2 ? "/memory.events" : "/memory.oom_control"), "oom_kill")
      .value_or(0);
}

}  // namespace codeact::internal
