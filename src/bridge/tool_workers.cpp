#include "bridge/tool_workers.hpp"

#include <chrono>
#include <system_error>
#include <thread>

namespace codeact::internal {
namespace {
constexpr std::chrono::seconds kIdleLifetime{30};
}

ToolWorkers& ToolWorkers::Instance() {
  static auto* workers = new ToolWorkers();
  return *workers;
}

void ToolWorkers::Run(std::function<void()> job) {
  bool spawn = false;
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
    spawn = static_cast<int>(jobs_.size()) > idle_ && threads_ < kMaxThreads;
    if (spawn) ++threads_;
  }
  if (spawn) {
    try {
      std::thread([this] { Work(); }).detach();
      return;
    } catch (const std::system_error&) {
      // No thread to be had (the host is at its limit): the job waits for a running worker, or
      // for the next Run to try again. Never run it here: that would stall the run's loop.
      std::lock_guard lock(mu_);
      --threads_;
    }
    return;
  }
  cv_.notify_one();
}

ToolWorkerCounts ToolWorkers::Counts() {
  std::lock_guard lock(mu_);
  return {threads_, threads_ - idle_, static_cast<int>(jobs_.size())};
}

void ToolWorkers::Work() {
  std::unique_lock lock(mu_);
  while (true) {
    if (jobs_.empty()) {
      if (idle_ >= kMaxIdle) break;
      ++idle_;
      const bool got = cv_.wait_for(lock, kIdleLifetime, [&] { return !jobs_.empty(); });
      --idle_;
      if (!got) break;
    }
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();  // never throws: the bridge wraps handlers
    job = nullptr;
    lock.lock();
  }
  --threads_;
}

}  // namespace codeact::internal
