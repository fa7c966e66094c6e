#include "process/session_cgroups.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "os/errno_status.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Status WriteFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open " + path, errno);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return ErrnoStatus("write " + path, err);
  return Status::Ok();
}

// ".../name/cgroup.procs" -> ".../name"
std::string DirOf(const std::string& procs_file) {
  return procs_file.substr(0, procs_file.rfind('/'));
}

std::string CgroupRoot() {
  const char* root = std::getenv("CODEACT_CGROUP_ROOT");
  return root != nullptr && *root != '\0' ? root : "/sys/fs/cgroup";
}

}  // namespace

StatusOr<std::shared_ptr<SessionParentGroup>> SessionParentGroup::Create(
    std::shared_ptr<const CgroupSite> site, std::int64_t total_memory_bytes) {
  if (!site || !site->any()) {
    return FailedPrecondition(
        "sessions need a memory cgroup for their total memory budget, and no cgroup can be made "
        "here: " +
        (site ? site->missing : std::string("no cgroup site")) +
        " (docs/cgroups.md: `codeact setup-cgroups --user NAME` as root)");
  }
  if (!site->memory()) {
    return FailedPrecondition(
        "sessions need a memory cgroup for their total memory budget, and the cgroups here lack "
        "the memory controller: " +
        site->missing);
  }
  bool cpuacct = false;
  for (const auto& h : site->hierarchies) cpuacct = cpuacct || h.cpuacct;
  if (!cpuacct) {
    return FailedPrecondition(
        "sessions renew the CPU limit for every run from their cgroup's CPU time, and the "
        "cgroups here do not account CPU time (no cpuacct controller)");
  }
  // Processes are bounded by each session's own pids.max; the parent only holds memory.
  constexpr std::int64_t kPidsUnbounded = 4'194'304;  // PID_MAX_LIMIT
  auto group = RunCgroup::Create(site, {kPidsUnbounded, total_memory_bytes});
  if (!group.ok()) {
    return FailedPrecondition("cannot make the sessions' parent cgroup: " +
                              group.status().message());
  }
  CgroupSite child = *site;
  const auto& procs = (*group)->procs_files();
  for (std::size_t i = 0; i < child.hierarchies.size(); ++i) {
    CgroupSite::Hierarchy& h = child.hierarchies[i];
    h.dir = DirOf(procs[i]);
    if (!h.v2) continue;
    // A v2 group passes a controller to its children only through its subtree_control.
    for (const char* controller : {"memory", "pids", "cpu"}) {
      const bool wanted = std::string(controller) == "memory" ? h.memory
                          : std::string(controller) == "pids" ? h.pids
                                                              : h.cpu || h.cpuacct;
      if (!wanted) continue;
      if (Status s = WriteFile(h.dir + "/cgroup.subtree_control", std::string("+") + controller);
          !s.ok() && std::string(controller) != "cpu") {
        return FailedPrecondition("cannot pass the " + std::string(controller) +
                                  " controller to the sessions' groups: " + s.message());
      }
    }
  }
  return std::shared_ptr<SessionParentGroup>(new SessionParentGroup(
      std::move(*group), std::make_shared<const CgroupSite>(std::move(child)), total_memory_bytes));
}

FreezerGroup::FreezerGroup(std::string dir, Kind kind, bool own_dir)
    : dir_(std::move(dir)), kind_(kind), own_dir_(own_dir) {
  if (kind_ == Kind::kV1) join_files_.push_back(dir_ + "/tasks");
}

std::unique_ptr<FreezerGroup> FreezerGroup::ForSignals(const RunCgroup& group) {
  return std::unique_ptr<FreezerGroup>(
      new FreezerGroup(group.procs_files().front(), Kind::kSignals, false));
}

StatusOr<std::unique_ptr<FreezerGroup>> FreezerGroup::Create(const CgroupSite& site,
                                                             const RunCgroup& group) {
  for (std::size_t i = 0; i < site.hierarchies.size(); ++i) {
    if (!site.hierarchies[i].v2) continue;
    const std::string dir = DirOf(group.procs_files()[i]);
    if (::access((dir + "/cgroup.freeze").c_str(), W_OK) == 0) {
      return std::unique_ptr<FreezerGroup>(new FreezerGroup(dir, Kind::kV2, false));
    }
  }
  const std::string hierarchy = CgroupRoot() + "/freezer";
  struct stat st {};
  if (::stat(hierarchy.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return FailedPrecondition("no cgroup freezer here (no v2 cgroup.freeze, no " + hierarchy + ")");
  }
  const std::string subtree = hierarchy + "/" + CgroupSubtreeName(::geteuid());
  if (::mkdir(subtree.c_str(), 0755) != 0 && errno != EEXIST) {
    return FailedPrecondition("no cgroup freezer for this user: mkdir " + subtree + ": " +
                              std::strerror(errno));
  }
  const std::string dir = subtree + "/" + group.name();
  if (::mkdir(dir.c_str(), 0755) != 0) {
    return FailedPrecondition("no cgroup freezer for this session: mkdir " + dir + ": " +
                              std::strerror(errno));
  }
  auto freezer = std::unique_ptr<FreezerGroup>(new FreezerGroup(dir, Kind::kV1, true));
  if (::access((dir + "/freezer.state").c_str(), W_OK) != 0) {
    return FailedPrecondition(hierarchy + " is not a freezer hierarchy (no freezer.state)");
  }
  return freezer;
}

FreezerGroup::~FreezerGroup() {
  if (frozen_) (void)Thaw();
  if (!own_dir_) return;
  // The session group's kill has emptied it (a frozen process dies once thawed); rmdir waits
  // for the last exit.
  const auto end = Clock::now() + std::chrono::seconds(5);
  while (::rmdir(dir_.c_str()) != 0 && errno == EBUSY && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Status FreezerGroup::Freeze(std::chrono::milliseconds timeout) {
  if (kind_ == Kind::kSignals) return StopAll(timeout);
  const bool v2 = kind_ == Kind::kV2;
  if (Status s = v2 ? WriteFile(dir_ + "/cgroup.freeze", "1")
                    : WriteFile(dir_ + "/freezer.state", "FROZEN");
      !s.ok())
    return s;
  frozen_ = true;
  const auto end = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  while (true) {
    const std::string state =
        ReadFile(dir_ + (v2 ? "/cgroup.events" : "/freezer.state")).value_or("");
    if (v2 ? state.find("frozen 1") != std::string::npos : state.rfind("FROZEN", 0) == 0) {
      return Status::Ok();
    }
    if (Clock::now() >= end) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
  (void)Thaw();
  return DeadlineExceeded("the session's processes did not freeze within " +
                          std::to_string(timeout.count()) + " ms");
}

Status FreezerGroup::Thaw() {
  if (kind_ == Kind::kSignals) {
    ContinueAll();
    frozen_ = false;
    return Status::Ok();
  }
  Status s = kind_ == Kind::kV2 ? WriteFile(dir_ + "/cgroup.freeze", "0")
                                : WriteFile(dir_ + "/freezer.state", "THAWED");
  if (s.ok()) frozen_ = false;
  return s;
}

namespace {

std::vector<pid_t> ProcsOf(const std::string& procs_file) {
  std::vector<pid_t> pids;
  std::istringstream in(ReadFile(procs_file).value_or(""));
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

// Whether every thread of `pid` is stopped (state T or t), or the process is gone.
bool AllThreadsStopped(pid_t pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(tasks.c_str());
  if (dir == nullptr) return true;  // exited: nothing of it runs
  bool stopped = true;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string stat = ReadFile(tasks + "/" + e->d_name + "/stat").value_or("");
    // "tid (comm) S ...": the state follows the last ')' (comm may hold one).
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) continue;  // gone meanwhile
    const char state = stat[close + 2];
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') stopped = false;
  }
  ::closedir(dir);
  return stopped;
}

}  // namespace

Status FreezerGroup::StopAll(std::chrono::milliseconds timeout) {
  frozen_ = true;
  const auto end = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  while (true) {
    // Until a read of the group finds no process that is not stopped: a process that forked
    // before its stop shows up in the next read and is stopped then.
    bool all = true;
    for (const pid_t pid : ProcsOf(dir_)) {
      if (AllThreadsStopped(pid)) continue;
      all = false;
      (void)::kill(pid, SIGSTOP);
    }
    if (all) return Status::Ok();
    if (Clock::now() >= end) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
  ContinueAll();
  frozen_ = false;
  return DeadlineExceeded("the session's processes did not stop (SIGSTOP) within " +
                          std::to_string(timeout.count()) + " ms");
}

void FreezerGroup::ContinueAll() {
  for (const pid_t pid : ProcsOf(dir_)) (void)::kill(pid, SIGCONT);
}

}  // namespace codeact::internal
