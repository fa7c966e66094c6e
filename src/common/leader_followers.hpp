// LeaderFollowers: a few threads that take turns reading one input and run the tasks it brings,
// so that a task read while a slot is free runs on the thread that read it (the leader/followers
// pattern). Handing each task to a second thread costs a wake-up and that thread's scheduling
// latency, which on a loaded machine is milliseconds; here the reader keeps its task and passes
// the reading to another thread instead, whose wake-up is off the task's path.
//
// One thread at a time, the leader, calls `read`, which answers what it read or Posts tasks.
// When `read` returns with a task kept (the first one Posted while fewer than `max_running` ran
// and none was waiting), the leader wakes an idle thread to lead — or starts one: threads are
// started on need, at most `max_running` + 1, so that one reads while `max_running` tasks run —
// and runs its task. At most `max_running` tasks run at once; the others wait in order in a
// queue of `max_queued`, and a Post beyond that blocks the reading (a producer that floods it is
// slowed down, memory stays bounded). Nothing posted is dropped: the destructor waits for every
// task, then joins.
//
// Thread-safe as stated per member; `read` runs on one thread at a time, never on the caller's.
//
// Internal (codeact::internal).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace codeact::internal {

class LeaderFollowers {
 public:
  // Reads what comes next and answers it or Posts its tasks; false: the input ended.
  using Read = std::function<bool()>;

  // `max_running` at least one; `max_queued` tasks may wait for a slot (0: one).
  LeaderFollowers(int max_running, std::size_t max_queued);
  // Waits until every task posted has run, then joins the threads.
  ~LeaderFollowers();
  LeaderFollowers(const LeaderFollowers&) = delete;
  LeaderFollowers& operator=(const LeaderFollowers&) = delete;

  // Calls `read` on the loop's threads, one at a time, until it returns false or throws (the
  // exception is rethrown here); the tasks posted may still run when this returns. The calling
  // thread only waits. At most once per object.
  void ReadUntilEnd(Read read);

  // Only from `read`. Keeps `task` for the reading thread when a slot is free and nothing waits
  // (the first such task of a read; later ones queue); else queues it, blocking while the queue
  // is full. A task must not throw (that ends the process, as on any thread).
  void Post(std::function<void()> task);

  // The input ended, and no task waits or runs.
  bool Idle();

 private:
  void Work();
  std::function<void()> Lead(std::unique_lock<std::mutex>& lock);
  void Run(std::unique_lock<std::mutex>& lock, std::function<void()> task);
  bool SummonForWorkLeft();
  bool IdleLocked() const { return input_ended_ && queue_.empty() && running_ == 0; }

  const int max_running_;
  const std::size_t max_queued_;
  const std::size_t max_threads_;
  Read read_;
  std::mutex mu_;
  std::condition_variable work_cv_;   // idle threads wait here for work or the end
  std::condition_variable space_cv_;  // a Post waits here for room in the queue
  std::condition_variable end_cv_;    // ReadUntilEnd and the destructor wait here
  std::deque<std::function<void()>> queue_;
  std::function<void()> kept_;  // the task the leader runs once its read returns
  int running_ = 0;             // tasks running, and the kept one: its slot is taken
  int idle_ = 0;                // threads waiting on work_cv_
  bool leading_ = false;
  bool input_ended_ = false;
  std::exception_ptr read_error_;
  std::vector<std::thread> threads_;
};

}  // namespace codeact::internal
