#include "cli/process_setup.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

namespace codeact::cli {
namespace {

int g_shutdown_write_fd = -1;

void OnShutdownSignal(int) {
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] ssize_t n =
      ::write(g_shutdown_write_fd, &byte, 1);  // full pipe: already pending
  errno = saved;
}

}  // namespace

void RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == limit.rlim_max) return;
  rlim_t target = limit.rlim_max;
  if (target == RLIM_INFINITY) {
    // Linux refuses an infinite RLIMIT_NOFILE; the most it grants is fs.nr_open.
    std::ifstream nr_open("/proc/sys/fs/nr_open");
    unsigned long long n = 0;
    if (!(nr_open >> n) || n == 0) return;
    target = static_cast<rlim_t>(n);
  }
  if (target <= limit.rlim_cur) return;
  limit.rlim_cur = target;
  (void)::setrlimit(RLIMIT_NOFILE, &limit);  // best effort: the old soft limit still works
}

int InstallShutdownSignals() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  g_shutdown_write_fd = fds[1];
  struct sigaction action {};
  action.sa_handler = OnShutdownSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGTERM, &action, nullptr) != 0 || ::sigaction(SIGINT, &action, nullptr) != 0) {
    ::signal(SIGTERM, SIG_DFL);
    ::close(fds[0]);
    ::close(fds[1]);
    g_shutdown_write_fd = -1;
    return -1;
  }
  return fds[0];
}

}  // namespace codeact::cli
