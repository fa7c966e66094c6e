#include "process/pids_cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <thread>

#include "process/posix_util.hpp"

namespace codeact::internal {
namespace {

bool WriteText(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Run groups are named <host pid>-<n>; a host that was killed left its (empty) groups behind.
void RemoveStale(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    const pid_t owner = static_cast<pid_t>(std::atoll(e->d_name));
    if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) ::rmdir((dir + "/" + e->d_name).c_str());
  }
  ::closedir(d);
}

// The directory the run groups go under: <pids hierarchy>/codeact.
StatusOr<std::string> Base() {
  static std::mutex mu;
  static std::optional<StatusOr<std::string>> base;
  std::lock_guard lock(mu);
  if (base) return *base;
  base = [&]() -> StatusOr<std::string> {
    std::string root;
    if (Exists("/sys/fs/cgroup/pids/cgroup.procs")) {
      root = "/sys/fs/cgroup/pids";  // v1
    } else if (std::ifstream in("/sys/fs/cgroup/cgroup.controllers"); in) {
      std::string controllers((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (controllers.find("pids") == std::string::npos) return Unavailable("cgroup v2 has no pids controller");
      root = "/sys/fs/cgroup";  // v2: children of the root may enable controllers
      if (!WriteText(root + "/cgroup.subtree_control", "+pids")) {
        return Unavailable("cannot enable the pids controller: " + ErrnoText(errno));
      }
    } else {
      return Unavailable("no pids cgroup hierarchy is mounted");
    }
    const std::string dir = root + "/codeact";
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return Unavailable("cannot create a cgroup under " + root + ": " + ErrnoText(errno));
    }
    if (root == "/sys/fs/cgroup") WriteText(dir + "/cgroup.subtree_control", "+pids");
    RemoveStale(dir);
    return dir;
  }();
  return *base;
}

}  // namespace

Status PidsCgroup::Available() {
  auto base = Base();
  return base.ok() ? Status::Ok() : base.status();
}

StatusOr<PidsCgroup> PidsCgroup::Create(std::int64_t max_processes) {
  auto base = Base();
  if (!base.ok()) return base.status();
  static std::atomic<std::uint64_t> counter{0};
  const std::string path = *base + "/" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  if (::mkdir(path.c_str(), 0700) != 0) return ErrnoStatus("mkdir " + path, errno);
  PidsCgroup group(path);
  if (!WriteText(path + "/pids.max", std::to_string(max_processes))) {
    return ErrnoStatus("write " + path + "/pids.max", errno);
  }
  return group;
}

PidsCgroup::PidsCgroup(PidsCgroup&& other) noexcept : path_(std::exchange(other.path_, {})) {}

PidsCgroup& PidsCgroup::operator=(PidsCgroup&& other) noexcept {
  if (this != &other) {
    PidsCgroup old(std::move(*this));
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

PidsCgroup::~PidsCgroup() {
  if (path_.empty()) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (::rmdir(path_.c_str()) != 0 && errno == EBUSY && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace codeact::internal
