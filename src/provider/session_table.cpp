#include "provider/session_table.hpp"

#include <unistd.h>

#include <atomic>
#include <vector>

namespace codeact::internal {

using SteadyClock = std::chrono::steady_clock;

SessionCore::SessionCore(std::string id, std::string name, std::unique_ptr<ExecutorSession> backend,
                         RunSnapshot snapshot, std::uint64_t tools_version,
                         std::int64_t idle_expiry_ms)
    : id_(std::move(id)),
      name_(std::move(name)),
      snapshot_(std::move(snapshot)),
      tools_version_(tools_version),
      idle_expiry_(idle_expiry_ms),
      backend_(std::move(backend)) {}

SessionCore::~SessionCore() { Close("closed"); }

std::chrono::system_clock::time_point SessionCore::last_used() const {
  std::lock_guard lock(mu_);
  return last_used_;
}

std::optional<ExecutionResult> SessionCore::Run(
    const std::function<ExecutionResult(ExecutorSession&)>& body) {
  {
    std::lock_guard lock(mu_);
    if (!closed_reason_.empty()) return std::nullopt;
    ++runs_in_flight_;
  }
  ExecutionResult r = body(*backend_);
  std::lock_guard lock(mu_);
  --runs_in_flight_;
  last_used_ = std::chrono::system_clock::now();
  last_used_steady_ = SteadyClock::now();
  return r;
}

Status SessionCore::Pause() {
  if (closed()) return FailedPrecondition("the session is " + closed_reason());
  return backend_->Pause();
}

Status SessionCore::Resume() {
  if (closed()) return FailedPrecondition("the session is " + closed_reason());
  return backend_->Resume();
}

bool SessionCore::paused() const { return backend_->paused(); }

void SessionCore::Close(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (closed_reason_.empty()) {
      closed_reason_ = reason;
      expired_ = reason.rfind("expired", 0) == 0;
    }
  }
  backend_->Close();  // idempotent; waits for a run in flight, which it ends
}

bool SessionCore::closed() const {
  std::lock_guard lock(mu_);
  return !closed_reason_.empty();
}

std::string SessionCore::closed_reason() const {
  std::lock_guard lock(mu_);
  return closed_reason_;
}

bool SessionCore::expired() const {
  std::lock_guard lock(mu_);
  return expired_;
}

std::optional<SteadyClock::time_point> SessionCore::ExpiresAt() const {
  std::lock_guard lock(mu_);
  if (!closed_reason_.empty() || runs_in_flight_ > 0) return std::nullopt;
  return last_used_steady_ + idle_expiry_;
}

StatusOr<std::shared_ptr<SessionCore>> SessionTable::Add(const std::string& name,
                                                         RunSnapshot snapshot,
                                                         std::uint64_t tools_version,
                                                         const Opener& open) {
  static std::atomic<std::uint64_t> counter{0};
  {
    std::lock_guard lock(mu_);
    if (stopping_) return FailedPrecondition("the provider is shutting down");
    if (OpenCountLocked() + opening_ >= settings_.max_sessions) {
      return ResourceExhausted("the limit of " + std::to_string(settings_.max_sessions) +
                               " open sessions is reached: close one, or wait until one has been "
                               "unused for " +
                               std::to_string(settings_.idle_expiry_ms) +
                               " ms (SessionSettings::max_sessions, idle_expiry_ms)");
    }
    ++opening_;
  }
  auto backend = open();
  std::lock_guard lock(mu_);
  --opening_;
  if (!backend.ok()) return backend.status();
  const std::string id = "s" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  auto core =
      std::make_shared<SessionCore>(id, name.empty() ? id : name, std::move(*backend),
                                    std::move(snapshot), tools_version, settings_.idle_expiry_ms);
  sessions_[id] = core;
  if (!expiry_.joinable()) expiry_ = std::thread([this] { ExpiryLoop(); });
  wake_.notify_all();
  return core;
}

void SessionTable::Remove(const std::string& id) {
  std::lock_guard lock(mu_);
  sessions_.erase(id);
}

int SessionTable::OpenCountLocked() const {
  int n = 0;
  for (const auto& [id, core] : sessions_) n += core->closed() ? 0 : 1;
  return n;
}

int SessionTable::OpenCount() const {
  std::lock_guard lock(mu_);
  return OpenCountLocked();
}

void SessionTable::Touched() { wake_.notify_all(); }

void SessionTable::ExpiryLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = SteadyClock::now();
    std::optional<SteadyClock::time_point> next;
    std::vector<std::shared_ptr<SessionCore>> due;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second->closed()) {
        it = sessions_.erase(it);  // its handle keeps what it needs
        continue;
      }
      if (auto at = it->second->ExpiresAt()) {
        if (*at <= now) {
          due.push_back(it->second);
        } else if (!next || *at < *next) {
          next = *at;
        }
      }
      ++it;
    }
    if (!due.empty()) {
      lock.unlock();  // closing waits for the processes to die
      for (const auto& core : due) {
        core->Close("expired after " + std::to_string(settings_.idle_expiry_ms) +
                    " ms without use");
      }
      due.clear();
      lock.lock();
      continue;
    }
    // Woken early by a run's end or a new session; a run in flight has no deadline, so a
    // minute's nap bounds how late its end is noticed if nobody wakes the thread.
    wake_.wait_until(lock, next.value_or(now + std::chrono::minutes(1)));
  }
}

void SessionTable::Shutdown() {
  std::vector<std::shared_ptr<SessionCore>> left;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, core] : sessions_) left.push_back(core);
    sessions_.clear();
  }
  wake_.notify_all();
  if (expiry_.joinable() && expiry_.get_id() != std::this_thread::get_id()) expiry_.join();
  for (const auto& core : left) core->Close("closed");
}

}  // namespace codeact::internal
