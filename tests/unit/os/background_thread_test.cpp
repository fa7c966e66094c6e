// YieldOnWakeUp (os/background_thread.hpp) moves only the calling thread to SCHED_BATCH, at its
// usual nice value.
#include "os/background_thread.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>

#include <thread>

namespace codeact::internal {
namespace {

TEST(BackgroundThreadTest, OnlyTheCallingThreadTurnsBatch) {
  int policy_there = -1;
  int nice_there = 100;
  std::thread([&] {
    YieldOnWakeUp();
    policy_there = ::sched_getscheduler(0);
    nice_there = ::getpriority(PRIO_PROCESS, 0);  // the calling thread's (Linux)
  }).join();
  EXPECT_EQ(policy_there, SCHED_BATCH);
  EXPECT_EQ(nice_there, ::getpriority(PRIO_PROCESS, 0));
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER) << "the caller's own thread is untouched";
}

}  // namespace
}  // namespace codeact::internal
