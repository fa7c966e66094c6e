#include "common/leader_followers.hpp"

#include <algorithm>
#include <system_error>
#include <utility>

namespace codeact::internal {

LeaderFollowers::LeaderFollowers(int max_running, std::size_t max_queued)
    : max_running_(std::max(max_running, 1)),
      max_queued_(std::max<std::size_t>(max_queued, 1)),
      max_threads_(static_cast<std::size_t>(max_running_) + 1) {}

LeaderFollowers::~LeaderFollowers() {
  {
    std::unique_lock lock(mu_);
    end_cv_.wait(lock, [this] { return threads_.empty() || IdleLocked(); });
  }
  // Idle after the end of the input: no thread takes work again, so none is started any more.
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void LeaderFollowers::ReadUntilEnd(Read read) {
  std::unique_lock lock(mu_);
  read_ = std::move(read);
  threads_.emplace_back([this] { Work(); });
  end_cv_.wait(lock, [this] { return input_ended_; });
  if (read_error_) std::rethrow_exception(read_error_);
}

void LeaderFollowers::Post(std::function<void()> task) {
  std::unique_lock lock(mu_);
  if (!kept_ && queue_.empty() && running_ < max_running_) {
    kept_ = std::move(task);
    ++running_;
    return;
  }
  while (queue_.size() >= max_queued_) {
    // While the reader waits here it cannot run the task it kept: another thread must (the task
    // goes first, as the oldest; the queue holds one more than its bound until it is taken).
    if (kept_) {
      queue_.push_front(std::exchange(kept_, nullptr));
      --running_;
    }
    if (SummonForWorkLeft()) work_cv_.notify_one();
    space_cv_.wait(lock);
  }
  queue_.push_back(std::move(task));
}

bool LeaderFollowers::Idle() {
  std::lock_guard lock(mu_);
  return IdleLocked();
}

void LeaderFollowers::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (!queue_.empty() && running_ < max_running_) {
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      space_cv_.notify_one();
      Run(lock, std::move(task));
    } else if (!leading_ && !input_ended_) {
      if (std::function<void()> task = Lead(lock)) Run(lock, std::move(task));
    } else if (input_ended_ && queue_.empty()) {
      return;  // no task can come any more
    } else {
      ++idle_;
      work_cv_.wait(lock);
      --idle_;
    }
  }
}

// Reads once as the leader; returns the task the read kept, whose slot is already counted.
std::function<void()> LeaderFollowers::Lead(std::unique_lock<std::mutex>& lock) {
  leading_ = true;
  lock.unlock();
  bool more = false;
  std::exception_ptr error;
  try {
    more = read_();
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  leading_ = false;
  if (!more) {
    input_ended_ = true;
    read_error_ = error;
    end_cv_.notify_all();
    work_cv_.notify_all();  // the idle threads end once the queue is empty
  }
  return std::exchange(kept_, nullptr);
}

// Runs `task` in the slot already counted for it; called and returns with `lock` held. First
// it makes sure a thread comes for the work it leaves (the reading, the next task of a batch),
// so that the reading goes on while the task runs.
void LeaderFollowers::Run(std::unique_lock<std::mutex>& lock, std::function<void()> task) {
  const bool wake = SummonForWorkLeft();
  lock.unlock();
  if (wake) work_cv_.notify_one();
  task();
  task = nullptr;  // what the task holds goes before this thread takes more work
  lock.lock();
  --running_;
  if (IdleLocked()) end_cv_.notify_all();
}

// Under the lock: when work is left that no thread has taken (the reading, or a task with a slot
// free), makes sure a thread comes for it — true: an idle one, which the caller wakes once the
// lock is released; else a new one, while fewer than max_threads_ exist (when they all exist and
// none is idle, each is reading or running a task, so none can be left). A thread that takes work
// calls this again, so the tasks of a batch wake as many threads as there are slots.
bool LeaderFollowers::SummonForWorkLeft() {
  const bool work_left =
      (!leading_ && !input_ended_) || (!queue_.empty() && running_ < max_running_);
  if (!work_left) return false;
  if (idle_ > 0) return true;
  if (threads_.size() >= max_threads_) return false;
  try {
    threads_.emplace_back([this] { Work(); });
  } catch (const std::system_error&) {
    // No thread to be had now: the work waits for a busy one, which looks for work when done.
  }
  return false;
}

}  // namespace codeact::internal
