#include "backends/local/process_level_identity.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/errno_status.hpp"
#include "sandbox/idmap.hpp"

namespace codeact::internal {

StatusOr<UniqueFd> MountTree(const std::string& host_path, bool read_only, uid_t run_uid) {
  IdmapError error;
  UniqueFd tree(internal::MountTree(host_path, read_only, run_uid, error));
  if (!tree) return ErrnoStatus(error.step, error.err);
  return tree;
}

bool PrivateMountNamespaceWorks() {
  static const bool works = [] {
    const pid_t pid = ::fork();  // the child only makes system calls: safe in a threaded host
    if (pid < 0) return false;
    if (pid == 0) ::_exit(::unshare(CLONE_NEWNS) == 0 ? 0 : 1);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }();
  return works;
}

}  // namespace codeact::internal
