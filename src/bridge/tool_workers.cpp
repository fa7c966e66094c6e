#include "bridge/tool_workers.hpp"

#include <chrono>
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
    spawn = static_cast<int>(jobs_.size()) > idle_;
  }
  if (spawn) {
    std::thread([this] { Work(); }).detach();
  } else {
    cv_.notify_one();
  }
}

void ToolWorkers::Work() {
  std::unique_lock lock(mu_);
  while (true) {
    if (jobs_.empty()) {
      if (idle_ >= kMaxIdle) return;
      ++idle_;
      const bool got = cv_.wait_for(lock, kIdleLifetime, [&] { return !jobs_.empty(); });
      --idle_;
      if (!got) return;
    }
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();  // never throws: the bridge wraps handlers
    job = nullptr;
    lock.lock();
  }
}

}  // namespace codeact::internal
