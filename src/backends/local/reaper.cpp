#include "backends/local/reaper.hpp"

namespace codeact::internal {

Reaper::Reaper() : thread_([this] { Loop(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Reaper::Finish(ReadyChild child) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(child));
  }
  cv_.notify_one();
}

void Reaper::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is finished
    {
      ReadyChild c = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      c.KillAll();
      c.child->Wait();
    }  // the working directory goes only now, after the processes
    lock.lock();
  }
}

}  // namespace codeact::internal
