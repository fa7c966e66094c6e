// MakeIdmapUserns (sandbox/idmap.hpp) called by several threads of one host at once, as a
// serving host's warm-pool refill and a run's cold start do for a read-write mount: each helper
// child ends when its own pipe closes, so no helper may hold another thread's pipe.
#include "sandbox/idmap.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace codeact::internal {
namespace {

// Four threads making 200 namespaces each: the exit code of the process that ran them, or -1 when
// it had not ended after `deadline` (then it and its helpers, one process group, are killed).
int ConcurrentIdmaps(std::chrono::seconds deadline) {
  const pid_t stress = ::fork();
  if (stress < 0) return -2;
  if (stress == 0) {
    ::setpgid(0, 0);
    int failures = 0;
    std::vector<std::thread> threads;
    std::mutex mu;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) {
          IdmapError error;
          const int fd = MakeIdmapUserns(0, 0, static_cast<uid_t>(1'900'000'000 + t), error);
          if (fd < 0) {
            std::lock_guard lock(mu);
            ++failures;
          } else {
            ::close(fd);
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    ::_exit(failures == 0 ? 0 : 1);
  }
  ::setpgid(stress, stress);
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (::waitpid(stress, &status, WNOHANG) == stress)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-stress, SIGKILL);
  ::waitpid(stress, nullptr, 0);
  return -1;
}

TEST(IdmapTest, ThreadsMakingNamespacesAtOnceDoNotWaitForEachOthersHelpers) {
  if (::geteuid() != 0) GTEST_SKIP() << "an idmap's namespace needs CAP_SETUID (a root host)";
  IdmapError probe;
  const int fd = MakeIdmapUserns(0, 0, 1'900'000'000, probe);
  if (fd < 0) GTEST_SKIP() << "no user namespaces here: " << probe.step;
  ::close(fd);
  EXPECT_EQ(ConcurrentIdmaps(std::chrono::seconds(60)), 0)
      << "-1: the threads were still waiting after 60 s (a helper held another's pipe)";
}

}  // namespace
}  // namespace codeact::internal
