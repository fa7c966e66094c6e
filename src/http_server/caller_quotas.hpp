// CallerQuotas: the HTTP service's limits per caller (a token's line, a JWT's subject): runs in
// flight at once, and a token bucket of requests per second, where a request that runs code
// costs one per run. Either refusal becomes a 429 with Retry-After.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace codeact::internal {

class CallerQuotas {
 public:
  using Clock = std::chrono::steady_clock;

  CallerQuotas(int max_concurrent, double rate, double burst)
      : max_concurrent_(max_concurrent),
        rate_(rate),
        burst_(burst > 0 ? burst : std::max(1.0, rate)) {}

  // Takes `cost` from the caller's bucket (a request, or the runs it asks for: a batch of N
  // tools/call costs N); the seconds to wait when the bucket holds less. Nothing is taken then.
  // A cost over the burst never fits: see burst().
  std::optional<int> TakeRequest(const std::string& owner, double cost = 1) {
    if (rate_ <= 0 || cost <= 0) return std::nullopt;
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    if (buckets_.size() >= prune_at_) Prune(now);
    Bucket& b = buckets_.try_emplace(owner, Bucket{burst_, now}).first->second;
    b.tokens = Refilled(b, now);
    b.at = now;
    if (b.tokens >= cost) {
      b.tokens -= cost;
      return std::nullopt;
    }
    return std::max(1, static_cast<int>(std::ceil((cost - b.tokens) / rate_)));
  }

  bool limits_rate() const { return rate_ > 0; }
  double burst() const { return burst_; }

  // The callers whose bucket is remembered (for the tests).
  std::size_t tracked_callers() {
    std::lock_guard lock(mu_);
    return buckets_.size();
  }

  // A run slot of the caller, released when the returned guard goes; nothing when all are taken.
  std::optional<std::shared_ptr<void>> TakeRun(const std::string& owner) {
    if (max_concurrent_ <= 0) return std::shared_ptr<void>();
    std::lock_guard lock(mu_);
    int& n = running_[owner];
    if (n >= max_concurrent_) return std::nullopt;
    ++n;
    return std::shared_ptr<void>(nullptr, [this, owner](void*) {
      std::lock_guard l(mu_);
      if (--running_[owner] == 0) running_.erase(owner);
    });
  }

 private:
  struct Bucket {
    double tokens;
    Clock::time_point at;
  };
  double Refilled(const Bucket& b, Clock::time_point now) const {
    return std::min(burst_, b.tokens + rate_ * std::chrono::duration<double>(now - b.at).count());
  }

  // Forgets the buckets that have refilled: a full bucket is what an unknown caller gets, so this
  // changes no answer, and the map holds only the callers seen in the last burst/rate seconds
  // (amortised: the next sweep waits until the map has doubled).
  void Prune(Clock::time_point now) {
    std::erase_if(buckets_,
                  [&](const auto& entry) { return Refilled(entry.second, now) >= burst_; });
    prune_at_ = std::max(kMinPruneAt, 2 * buckets_.size());
  }

  static constexpr std::size_t kMinPruneAt = 1024;
  const int max_concurrent_;
  const double rate_;
  const double burst_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
  std::size_t prune_at_ = kMinPruneAt;
  std::map<std::string, int> running_;
};

}  // namespace codeact::internal
