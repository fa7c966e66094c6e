// TaskThread: tasks run in order on the worker, a bounded queue makes Post wait, Call returns a
// value or an exception, and the destructor runs everything posted before it joins.
#include "common/task_thread.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace codeact::internal {
namespace {

constexpr auto kGenerous = std::chrono::seconds(30);

TEST(TaskThreadTest, OneThreadRunsTasksInOrderOffTheCallersThread) {
  std::vector<int> order;
  std::thread::id ran_on;
  {
    TaskThread thread;
    for (int i = 0; i < 100; ++i) thread.Post([&order, i] { order.push_back(i); });
    thread.Post([&ran_on] { ran_on = std::this_thread::get_id(); });
  }  // the destructor runs what is queued
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  EXPECT_NE(ran_on, std::thread::id());
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(TaskThreadTest, CallReturnsTheValueOrTheException) {
  TaskThread thread;
  EXPECT_EQ(thread.Call([] { return std::string("done"); }), "done");
  EXPECT_THROW(thread.Call([]() -> int { throw std::runtime_error("failed"); }),
               std::runtime_error);
  int calls = 0;
  thread.Call([&calls] { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(TaskThreadTest, ATaskIsDestroyedBeforeTheNextOneRuns) {
  TaskThread thread;
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> watch = held;
  thread.Post([held = std::move(held)] {});
  EXPECT_TRUE(thread.Call([&watch] { return watch.expired(); }));
}

TEST(TaskThreadTest, PostWaitsWhileTheQueueIsFull) {
  TaskThread thread(1, 1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  thread.Post([&started, released] {
    started.set_value();
    released.wait();
  });
  ASSERT_EQ(started.get_future().wait_for(kGenerous), std::future_status::ready);
  thread.Post([] {});  // fills the one queue place
  std::atomic<bool> third_posted{false};
  std::thread poster([&] {
    thread.Post([] {});
    third_posted = true;
  });
  // The poster can get nowhere while the worker is held and the place is taken. A negative
  // check needs a window: load can only make it pass wrongly, never fail wrongly.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(third_posted);
  EXPECT_FALSE(thread.Idle());
  release.set_value();
  poster.join();
  EXPECT_TRUE(third_posted);
  // The worker counts a task done just after its caller may see its result: wait for that.
  const auto until = std::chrono::steady_clock::now() + kGenerous;
  while (!thread.Idle() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_TRUE(thread.Idle());
}

TEST(TaskThreadTest, SeveralThreadsRunTasksAtOnce) {
  constexpr int kThreads = 3;
  TaskThread pool(kThreads);
  std::promise<void> all_in;
  std::shared_future<void> go = all_in.get_future().share();
  std::atomic<int> inside{0};
  std::vector<std::promise<void>> arrived(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    pool.Post([&, i] {
      ++inside;
      arrived[static_cast<std::size_t>(i)].set_value();
      go.wait();
    });
  }
  // Each task waits for `go`, so all three arriving means three threads ran at once.
  for (auto& a : arrived) ASSERT_EQ(a.get_future().wait_for(kGenerous), std::future_status::ready);
  EXPECT_EQ(inside, kThreads);
  all_in.set_value();
}

}  // namespace
}  // namespace codeact::internal
