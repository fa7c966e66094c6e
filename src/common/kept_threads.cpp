#include "common/kept_threads.hpp"

#include <algorithm>
#include <system_error>
#include <thread>

namespace codeact::internal {

bool KeptThreads::Run(std::function<void()> job, bool may_wait) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    id = next_id_++;
    jobs_.push_back({id, std::move(job)});
    // Each idle thread takes one job (a notified one no longer waits, so the next notify goes to
    // another); past them, a thread is started while the bound allows.
    if (static_cast<int>(jobs_.size()) <= idle_) {
      cv_.notify_one();
      return true;
    }
    if (limits_.max_threads > 0 && threads_ >= limits_.max_threads) {
      cv_.notify_one();
      return true;  // it waits for the next thread to be free
    }
    ++threads_;
  }
  try {
    std::thread([this] { Work(); }).detach();
    return true;
  } catch (const std::system_error&) {
    // No thread to be had. Never run the job here: that would stall the caller.
    std::lock_guard lock(mu_);
    --threads_;
    if (may_wait) return true;  // the next thread to be free takes it
    const auto it =
        std::find_if(jobs_.begin(), jobs_.end(), [id](const Job& j) { return j.id == id; });
    if (it == jobs_.end()) return true;  // a thread that came free took it meanwhile
    jobs_.erase(it);
    return false;
  }
}

KeptThreads::ThreadCounts KeptThreads::Counts() {
  std::lock_guard lock(mu_);
  return {threads_, threads_ - idle_, static_cast<int>(jobs_.size())};
}

void KeptThreads::Work() {
  std::unique_lock lock(mu_);
  while (true) {
    if (jobs_.empty()) {
      if (idle_ >= limits_.max_idle) break;
      ++idle_;
      const auto has_job = [this] { return !jobs_.empty(); };
      bool got = true;
      if (limits_.idle_lifetime.count() > 0) {
        got = cv_.wait_for(lock, limits_.idle_lifetime, has_job);
      } else {
        cv_.wait(lock, has_job);
      }
      --idle_;
      if (!got) break;
    }
    std::function<void()> job = std::move(jobs_.front().run);
    jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // what it holds goes before the thread waits
    lock.lock();
  }
  --threads_;
}

}  // namespace codeact::internal
