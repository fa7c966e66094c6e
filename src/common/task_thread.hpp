// TaskThread: one or a few threads that run queued tasks (std::function<void()>) in the order
// they were posted. With a bound, Post blocks while the queue is full, so a producer that floods
// it is slowed down instead of growing memory. The destructor runs every task already posted,
// then joins: nothing posted is ever dropped. A task must not throw (that ends the process, as
// an exception escaping any thread does); Call carries an exception back to its caller.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace codeact::internal {

class TaskThread {
 public:
  // `threads` workers (at least one); `max_queued` tasks may wait for one (0: no bound).
  explicit TaskThread(int threads = 1, std::size_t max_queued = 0);
  // Runs every task already posted, then joins the threads.
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Queues `task`; blocks while the queue is at its bound. What the task holds is destroyed on
  // the worker right after it ran, before the worker takes the next one.
  void Post(std::function<void()> task);

  // Runs `fn` on a worker and returns what it returned (or throws what it threw). Never call it
  // from a task of the same TaskThread: with every worker waiting, it would wait forever.
  template <typename F>
  std::invoke_result_t<F&> Call(F fn) {
    std::packaged_task<std::invoke_result_t<F&>()> task(std::move(fn));
    auto result = task.get_future();
    Post([&task] { task(); });  // the caller waits below, so `task` outlives the call
    return result.get();
  }

  // Nothing queued and nothing running.
  bool Idle();

 private:
  void Work();

  const std::size_t max_queued_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable space_cv_;
  std::deque<std::function<void()>> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: started once the members above exist
};

}  // namespace codeact::internal
