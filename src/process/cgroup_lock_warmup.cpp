#include "process/cgroup_lock_warmup.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "os/pipe_io.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {
namespace {

// The `pids` hierarchy's group in /proc/thread-self/cgroup ("5:pids:/a/b" gives "/a/b"), or ""
// when there is no such line (cgroup v2 lists only "0::/path").
std::string PidsGroup() {
  UniqueFd fd(::open("/proc/thread-self/cgroup", O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  const std::string text = ReadToEnd(fd.get(), 65536).value_or("");
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second != std::string::npos && line.compare(first + 1, second - first - 1, "pids") == 0) {
      return line.substr(second + 1);
    }
    at = end + 1;
  }
  return "";
}

}  // namespace

void WarmCgroupMigrationLock() {
  const std::string group = PidsGroup();
  if (group.empty() || group[0] != '/' || group.find("/..") != std::string::npos) return;
  const std::string tasks =
      "/sys/fs/cgroup/pids" + (group == "/" ? std::string() : group) + "/tasks";
  UniqueFd fd(::open(tasks.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return;
  const std::string tid = std::to_string(static_cast<long>(::syscall(SYS_gettid)));
  (void)!::write(fd.get(), tid.data(), tid.size());
}

}  // namespace codeact::internal
