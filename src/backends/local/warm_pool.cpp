#include "backends/local/warm_pool.hpp"

#include <algorithm>
#include <utility>

#include "os/background_thread.hpp"

namespace codeact::internal {
namespace {
constexpr int kMaxStartFailures = 3;

// An idle child is dead (or unusable) once it can be reaped or its bridge shows anything.
bool Unusable(const ReadyChild& c) { return c.child->BridgeHungUpOrBusy() || c.child->TryWait(); }
// How often idle children are checked for having died (the idle timeout may wake it sooner).
constexpr std::chrono::seconds kHealthCheckPeriod{1};
}  // namespace

ReadyChild::~ReadyChild() {
  if (!child) return;  // moved from
  KillAll();
  child->Wait();
}

void ReadyChild::KillAll() {
  // A child with a cgroup joined it before it could run anything (all-or-nothing), so the group
  // holds everything it started. But the namespaces level's launcher joins the cgroup itself,
  // after its exec: a kill that comes before that (a run cancelled while its child was starting)
  // finds the cgroup empty and the launcher goes on to run the code. Its process group, which
  // holds the launcher and what it started, is killed as well.
  if (cgroup) {
    cgroup->KillAll();
    child->KillGroup();
  } else {
    child->KillAll();
  }
}

WarmPool::WarmPool(int per_key, std::chrono::milliseconds idle_timeout, Starter start,
                   KeyDropped dropped)
    : per_key_(per_key),
      idle_timeout_(idle_timeout),
      start_(std::move(start)),
      dropped_(std::move(dropped)) {
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

void WarmPool::TellDropped(const std::vector<std::string>& keys) const {
  if (!dropped_) return;
  for (const auto& key : keys) dropped_(key);
}

WarmPool::Slot& WarmPool::Touch(const std::string& key, const RunSnapshot& snapshot,
                                std::vector<ReadyChild>& evicted,
                                std::vector<std::string>& dropped_keys) {
  auto [it, inserted] = slots_.try_emplace(key);
  it->second.last_used = Clock::now();
  if (!inserted) return it->second;
  it->second.config = snapshot;
  it->second.config.tools.clear();
  // The least recently used key other than this one, among those of the run's tenant or all.
  auto evict_oldest = [&](bool same_tenant) {
    auto oldest = slots_.end();
    std::size_t count = 0;
    for (auto s = slots_.begin(); s != slots_.end(); ++s) {
      if (same_tenant && s->second.config.tenant != snapshot.tenant) continue;
      ++count;
      if (s != it && (oldest == slots_.end() || s->second.last_used < oldest->second.last_used))
        oldest = s;
    }
    if (count <= (same_tenant ? kMaxKeysPerTenant : kMaxKeys) || oldest == slots_.end()) return;
    for (auto& c : oldest->second.ready) evicted.push_back(std::move(c));
    dropped_keys.push_back(oldest->first);
    slots_.erase(oldest);
  };
  evict_oldest(/*same_tenant=*/true);
  evict_oldest(/*same_tenant=*/false);
  return it->second;
}

std::optional<ReadyChild> WarmPool::Take(const std::string& key, const RunSnapshot& snapshot) {
  std::optional<ReadyChild> taken;
  std::vector<ReadyChild> evicted;
  std::vector<std::string> dropped_keys;
  {
    std::lock_guard lock(mu_);
    Slot& slot = Touch(key, snapshot, evicted, dropped_keys);
    while (!slot.ready.empty() && !taken) {
      ReadyChild c = std::move(slot.ready.front());
      slot.ready.pop_front();
      if (Unusable(c)) {
        ++counters_.replaced;
        evicted.push_back(std::move(c));  // died while idle
      } else {
        taken = std::move(c);
      }
    }
    ++(taken ? counters_.served : counters_.missed);
    if (slot.failures < kMaxStartFailures) {
      refill_.push_back({key, Clock::now() + kRefillDelay});
      refills_untold_ = true;
    }
  }
  TellDropped(dropped_keys);
  return taken;  // evicted children are killed and reaped here, outside the lock
}

void WarmPool::TellRefills() {
  {
    std::lock_guard lock(mu_);
    if (!std::exchange(refills_untold_, false)) return;
  }
  cv_.notify_all();
}

void WarmPool::Warm(const std::string& key, const RunSnapshot& snapshot) {
  std::vector<ReadyChild> evicted;
  std::vector<std::string> dropped_keys;
  {
    std::lock_guard lock(mu_);
    if (Touch(key, snapshot, evicted, dropped_keys).failures < kMaxStartFailures) {
      refill_.push_back({key, Clock::now()});
    }
  }
  cv_.notify_all();
  TellDropped(dropped_keys);
}

void WarmPool::RunEnded() {
  {
    std::lock_guard lock(mu_);
    const auto soon = Clock::now() + kAfterRun;
    bool any = std::exchange(refills_untold_, false);
    for (Refill& r : refill_) {
      if (r.not_before > soon) {
        r.not_before = soon;
        any = true;
      }
    }
    if (!any) return;
  }
  cv_.notify_all();
}

std::vector<pid_t> WarmPool::IdlePids(const std::string* key) const {
  std::lock_guard lock(mu_);
  std::vector<pid_t> pids;
  for (const auto& [slot_key, slot] : slots_) {
    if (key != nullptr && slot_key != *key) continue;
    for (const auto& c : slot.ready) pids.push_back(c.host_pid != 0 ? c.host_pid : c.child->pid());
  }
  return pids;
}

WarmPoolCounters WarmPool::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

void WarmPool::Sweep(std::vector<ReadyChild>& dropped, std::vector<std::string>& dropped_keys) {
  const auto now = Clock::now();
  for (auto it = slots_.begin(); it != slots_.end();) {
    Slot& slot = it->second;
    if (now - slot.last_used >= idle_timeout_) {
      for (auto& c : slot.ready) dropped.push_back(std::move(c));
      dropped_keys.push_back(it->first);
      it = slots_.erase(it);
      continue;
    }
    bool lost = false;
    for (auto c = slot.ready.begin(); c != slot.ready.end();) {
      if (Unusable(*c)) {
        dropped.push_back(std::move(*c));
        c = slot.ready.erase(c);
        ++counters_.replaced;
        lost = true;
      } else {
        ++c;
      }
    }
    if (lost && slot.failures < kMaxStartFailures) refill_.push_back({it->first, now});
    ++it;
  }
}

void WarmPool::Loop() {
  YieldOnWakeUp();  // refills are started off the runs' path
  std::unique_lock lock(mu_);
  while (!stopping_) {
    std::vector<ReadyChild> dropped;
    std::vector<std::string> dropped_keys;
    Sweep(dropped, dropped_keys);
    if (!dropped.empty() || !dropped_keys.empty()) {
      lock.unlock();
      dropped.clear();  // kill, reap and remove outside the lock
      TellDropped(dropped_keys);
      lock.lock();
      continue;
    }
    const auto now = Clock::now();
    if (refill_.empty() || refill_.front().not_before > now) {
      // Sleep until work arrives or may start, the next key would expire, or the next health
      // check.
      auto wake = now + std::chrono::hours(1);
      if (!refill_.empty()) wake = refill_.front().not_before;
      for (const auto& [key, slot] : slots_) {
        wake = std::min(wake, slot.last_used + idle_timeout_);
        if (!slot.ready.empty()) wake = std::min(wake, now + kHealthCheckPeriod);
      }
      const std::size_t queued = refill_.size();
      cv_.wait_until(lock, wake, [&] {
        return stopping_ || refill_.size() != queued ||
               (!refill_.empty() && refill_.front().not_before < wake);  // RunEnded moved it
      });
      continue;
    }
    const std::string key = std::move(refill_.front().key);
    refill_.pop_front();
    auto it = slots_.find(key);
    if (it == slots_.end() || static_cast<int>(it->second.ready.size()) >= per_key_ ||
        it->second.failures >= kMaxStartFailures) {
      continue;
    }
    const RunSnapshot config = it->second.config;
    lock.unlock();
    StatusOr<ReadyChild> started = start_(key, config);
    if (started.ok()) {
      // Off the run's path; a pipe that cannot be made now is made by the run.
      if (auto wake = MakeNonBlockingPipe(); wake.ok()) started->wake = std::move(*wake);
    }
    lock.lock();
    it = slots_.find(key);
    if (!started.ok()) {
      // Runs keep starting children themselves and report the error.
      if (it != slots_.end()) ++it->second.failures;
      continue;
    }
    ++counters_.started;
    if (it == slots_.end() || stopping_) {
      // Dropped meanwhile (idle or evicted): the child dies outside the lock, and what the start
      // made for the key (its fork server) is dropped again.
      std::optional<ReadyChild> doomed(std::move(*started));
      lock.unlock();
      doomed.reset();
      if (it == slots_.end()) TellDropped({key});
      lock.lock();
      continue;
    }
    it->second.failures = 0;
    it->second.ready.push_back(std::move(*started));
    if (static_cast<int>(it->second.ready.size()) < per_key_)
      refill_.push_front({key, Clock::now()});
  }
}

}  // namespace codeact::internal
