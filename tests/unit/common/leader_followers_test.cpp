// LeaderFollowers: a task read while a slot is free runs on the thread that read it, the reading
// goes on on another thread while it runs, at most max_running run at once on at most
// max_running + 1 threads, a Post beyond the queue's bound waits (even for a batch longer than
// the queue), nothing posted is lost, not even when `read` throws, and no thread outlives it.
#include "common/leader_followers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace codeact::internal {
namespace {

constexpr auto kGenerous = std::chrono::seconds(30);

// This process's threads now.
std::ptrdiff_t ThreadCount() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                       std::filesystem::directory_iterator());
}

// What the tests' reads and tasks share, under one lock.
struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  int in_flight = 0;
  int max_in_flight = 0;
  bool released = false;
  std::set<std::thread::id> threads;

  template <typename Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, kGenerous, pred);
  }
};

TEST(LeaderFollowersTest, ATaskReadWhileASlotIsFreeRunsOnTheThreadThatReadIt) {
  constexpr int kReads = 6;
  Shared s;
  std::vector<std::thread::id> read_on(kReads), ran_on(kReads);
  int reads = 0;
  {
    LeaderFollowers loop(kReads + 1, 4);  // a task's slot is freed after it signals its end
    loop.ReadUntilEnd([&]() -> bool {
      const int i = reads++;
      if (i == kReads) return false;
      // Lone tasks: each read waits for the previous task to end.
      EXPECT_TRUE(s.WaitFor([&] { return s.done == i; })) << "read " << i;
      read_on[i] = std::this_thread::get_id();
      loop.Post([&s, &ran_on, i] {
        ran_on[i] = std::this_thread::get_id();
        std::lock_guard lock(s.mu);
        ++s.done;
        s.cv.notify_all();
      });
      return true;
    });
  }
  for (int i = 0; i < kReads; ++i) {
    EXPECT_EQ(ran_on[i], read_on[i]) << "task " << i;
    EXPECT_NE(ran_on[i], std::this_thread::get_id()) << "the caller only waits";
  }
}

TEST(LeaderFollowersTest, TheReadingGoesOnWhileTheOnlySlotIsTaken) {
  Shared s;
  bool second_read = false;
  bool task_saw_it = false;
  int reads = 0;
  {
    LeaderFollowers loop(1, 1);
    loop.ReadUntilEnd([&]() -> bool {
      if (reads++ == 0) {
        loop.Post([&] { task_saw_it = s.WaitFor([&] { return second_read; }); });
        return true;
      }
      std::lock_guard lock(s.mu);
      second_read = true;
      s.cv.notify_all();
      return false;
    });
  }
  EXPECT_TRUE(task_saw_it) << "no read happened while the task ran";
}

TEST(LeaderFollowersTest, AtMostMaxRunningRunAtOnceOnAtMostOneThreadMoreAllJoined) {
  Shared s;
  int reads = 0;
  const std::ptrdiff_t threads_before = ThreadCount();
  {
    LeaderFollowers loop(2, 8);
    loop.ReadUntilEnd([&]() -> bool {
      {
        std::lock_guard lock(s.mu);
        s.threads.insert(std::this_thread::get_id());
      }
      if (reads++ == 0) {
        for (int i = 0; i < 5; ++i) {  // a batch: one line, five tasks
          loop.Post([&s] {
            std::unique_lock lock(s.mu);
            s.threads.insert(std::this_thread::get_id());
            s.max_in_flight = std::max(s.max_in_flight, ++s.in_flight);
            s.cv.notify_all();
            s.cv.wait_for(lock, kGenerous, [&] { return s.released; });
            --s.in_flight;
            ++s.done;
            s.cv.notify_all();
          });
        }
        return true;
      }
      // Read on while two tasks hold both slots; then let them all go.
      EXPECT_TRUE(s.WaitFor([&] { return s.in_flight == 2; }));
      std::lock_guard lock(s.mu);
      s.released = true;
      s.cv.notify_all();
      return false;
    });
  }
  EXPECT_EQ(s.done, 5);
  EXPECT_EQ(s.max_in_flight, 2);
  EXPECT_LE(s.threads.size(), 3u);
  EXPECT_EQ(s.threads.count(std::this_thread::get_id()), 0u);
  EXPECT_EQ(ThreadCount(), threads_before) << "a thread outlived the loop";
}

TEST(LeaderFollowersTest, APostBeyondTheQueueWaitsForRoomAndTasksRunInOrder) {
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::size_t> ran_before_post;
  {
    LeaderFollowers loop(1, 1);
    bool first = true;
    loop.ReadUntilEnd([&]() -> bool {
      if (!first) return false;
      first = false;
      // Longer than the slot and the queue: the reader's own task must go to another thread.
      for (int i = 0; i < 4; ++i) {
        loop.Post([&mu, &order, i] {
          std::lock_guard lock(mu);
          order.push_back(i);
        });
        std::lock_guard lock(mu);
        ran_before_post.push_back(order.size());
      }
      return true;
    });
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(ran_before_post.size(), 4u);
  // The third Post found the slot and the queue taken: it returned only once task 0 had run.
  EXPECT_GE(ran_before_post[2], 1u);
}

TEST(LeaderFollowersTest, AnExceptionFromReadEndsTheReadingAndThePostedTaskStillRuns) {
  bool ran = false;
  {
    LeaderFollowers loop(2, 2);
    EXPECT_THROW(loop.ReadUntilEnd([&]() -> bool {
      loop.Post([&ran] { ran = true; });
      throw std::runtime_error("broken input");
    }),
                 std::runtime_error);
  }
  EXPECT_TRUE(ran);
}

TEST(LeaderFollowersTest, IdleOnlyOnceTheInputEndedAndEveryTaskRan) {
  Shared s;
  LeaderFollowers loop(1, 1);
  bool first = true;
  loop.ReadUntilEnd([&]() -> bool {
    if (!first) return false;
    first = false;
    loop.Post([&s] { EXPECT_TRUE(s.WaitFor([&] { return s.released; })); });
    return true;
  });
  EXPECT_FALSE(loop.Idle()) << "a task still runs";
  {
    std::lock_guard lock(s.mu);
    s.released = true;
    s.cv.notify_all();
  }
  const auto deadline = std::chrono::steady_clock::now() + kGenerous;
  while (!loop.Idle() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_TRUE(loop.Idle());
}

TEST(LeaderFollowersTest, NoReadNoThread) {
  LeaderFollowers loop(4, 4);
  EXPECT_FALSE(loop.Idle());
}  // the destructor returns at once

}  // namespace
}  // namespace codeact::internal
