#include "backends/local/warm_pool.hpp"

namespace codeact::internal {
namespace {
constexpr int kMaxStartFailures = 3;
}

WarmPool::WarmPool(int per_key, Starter start) : per_key_(per_key), start_(std::move(start)) {
  thread_ = std::thread([this] { Loop(); });
}

WarmPool::~WarmPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // Idle children die with their slots: Child's destructor kills and reaps, TempDir removes.
}

std::optional<ReadyChild> WarmPool::Take(const std::string& key, const RunSnapshot& snapshot) {
  std::optional<ReadyChild> taken;
  std::vector<ReadyChild> evicted;
  {
    std::lock_guard lock(mu_);
    auto [it, inserted] = slots_.try_emplace(key);
    Slot& slot = it->second;
    slot.last_used = ++clock_;
    if (inserted) {
      slot.config = snapshot;
      slot.config.tools.clear();
      if (slots_.size() > kMaxKeys) {
        auto oldest = slots_.end();
        for (auto s = slots_.begin(); s != slots_.end(); ++s) {
          if (s != it && (oldest == slots_.end() || s->second.last_used < oldest->second.last_used)) oldest = s;
        }
        for (auto& c : oldest->second.ready) evicted.push_back(std::move(c));
        slots_.erase(oldest);
      }
    }
    while (!slot.ready.empty() && !taken) {
      ReadyChild c = std::move(slot.ready.front());
      slot.ready.pop_front();
      if (c.child->TryWait()) {
        evicted.push_back(std::move(c));  // died while idle
      } else {
        taken = std::move(c);
      }
    }
    if (slot.failures < kMaxStartFailures) refill_.push_back(key);
  }
  cv_.notify_all();
  return taken;  // evicted children are killed and reaped here, outside the lock
}

std::vector<pid_t> WarmPool::IdlePids() const {
  std::lock_guard lock(mu_);
  std::vector<pid_t> pids;
  for (const auto& [fp, slot] : slots_) {
    for (const auto& c : slot.ready) pids.push_back(c.child->pid());
  }
  return pids;
}

void WarmPool::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !refill_.empty(); });
    if (stopping_) return;
    const std::string fp = std::move(refill_.front());
    refill_.pop_front();
    while (!stopping_) {
      auto it = slots_.find(fp);
      if (it == slots_.end() || static_cast<int>(it->second.ready.size()) >= per_key_ ||
          it->second.failures >= kMaxStartFailures) {
        break;
      }
      const RunSnapshot config = it->second.config;
      lock.unlock();
      StatusOr<ReadyChild> started = start_(config);
      lock.lock();
      it = slots_.find(fp);
      if (it == slots_.end()) break;  // evicted meanwhile; a started child dies with `started`
      if (!started.ok()) {
        ++it->second.failures;  // runs keep starting children themselves and report the error
        break;
      }
      it->second.failures = 0;
      it->second.ready.push_back(std::move(*started));
    }
  }
}

}  // namespace codeact::internal
