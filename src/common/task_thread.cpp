#include "common/task_thread.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace codeact::internal {

TaskThread::TaskThread(int threads, std::size_t max_queued)
    : max_queued_(max_queued == 0 ? std::numeric_limits<std::size_t>::max() : max_queued) {
  const int n = std::max(threads, 1);
  threads_.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Work(); });
}

TaskThread::~TaskThread() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void TaskThread::Post(std::function<void()> task) {
  std::unique_lock lock(mu_);
  space_cv_.wait(lock, [this] { return queue_.size() < max_queued_; });
  queue_.push_back(std::move(task));
  lock.unlock();
  work_cv_.notify_one();
}

bool TaskThread::Idle() {
  std::lock_guard lock(mu_);
  return queue_.empty() && running_ == 0;
}

void TaskThread::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything posted has run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    space_cv_.notify_one();
    task();
    task = nullptr;  // what the task holds goes before the next one starts
    lock.lock();
    --running_;
  }
}

}  // namespace codeact::internal
