// WorkPool: the HTTP service's runs go to a fixed set of worker threads with a bounded queue in
// front of them, so that a burst of requests is refused (429) rather than piling up threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace codeact::internal {

// `workers` threads and at most `capacity` tasks waiting for one; TrySubmit refuses past that.
class WorkPool {
 public:
  WorkPool(int workers, std::size_t capacity)
      : workers_(static_cast<std::size_t>(workers)), capacity_(capacity) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~WorkPool() { Stop(); }

  bool TrySubmit(std::function<void()> task) {
    std::lock_guard lock(mu_);
    // Idle workers take tasks at once; `capacity` more may wait.
    const std::size_t busy = queue_.size() + static_cast<std::size_t>(running_.load());
    if (stopping_ || busy >= workers_ + capacity_) return false;
    queue_.push_back(std::move(task));
    cv_.notify_one();
    return true;
  }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_ && threads_.empty()) return;
      stopping_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  std::int64_t queued() const {
    std::lock_guard lock(mu_);
    return static_cast<std::int64_t>(queue_.size());
  }
  std::int64_t running() const { return running_.load(); }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued has run
        task = std::move(queue_.front());
        queue_.pop_front();
        ++running_;
      }
      task();
      --running_;
    }
  }

  const std::size_t workers_;
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::atomic<std::int64_t> running_{0};
  std::vector<std::thread> threads_;
};

}  // namespace codeact::internal
