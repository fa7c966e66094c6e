// The cgroup migration lock's warm-up (process/cgroup_lock_warmup.hpp) moves its thread nowhere.
#include "process/cgroup_lock_warmup.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace codeact::internal {
namespace {

std::string ThreadCgroups() {
  std::ifstream in("/proc/thread-self/cgroup");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Whatever the host (v1 as root, v1 without the right to write, v2, none), the thread that warms
// the lock is in the same groups after as before, and the call returns.
TEST(CgroupLockWarmupTest, TheWarmingThreadStaysInItsGroups) {
  std::string before;
  std::string after;
  std::thread warm([&] {
    before = ThreadCgroups();
    WarmCgroupMigrationLock();
    after = ThreadCgroups();
  });
  warm.join();
  ASSERT_FALSE(before.empty()) << "no /proc/thread-self/cgroup";
  EXPECT_EQ(after, before);
  EXPECT_EQ(ThreadCgroups(), before) << "the calling process's main thread moved";
}

}  // namespace
}  // namespace codeact::internal
