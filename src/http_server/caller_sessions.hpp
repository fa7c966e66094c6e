// CallerSessions: how many sessions each caller of the HTTP service has open — its REST sessions
// and the named execute_code sessions of its MCP sessions together — held to `per_caller`, so
// that one caller cannot take every place of the provider's `max_sessions`. A session counts
// while it is open: one the provider closed (expired) or that nobody holds any more frees its
// place without being told. Over the cap Open refuses (RESOURCE_EXHAUSTED) before anything is
// started; no other caller's session is touched. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codeact/session.hpp"
#include "codeact/status.hpp"

namespace codeact::internal {

class CallerSessions {
 public:
  using Opener = std::function<StatusOr<std::shared_ptr<Session>>()>;

  explicit CallerSessions(int per_caller) : per_caller_(per_caller < 1 ? 1 : per_caller) {}

  int per_caller() const { return per_caller_; }

  // A session of `owner` from `open`, or RESOURCE_EXHAUSTED (and `open` not called) when the
  // owner has per_caller open or opening, or `open`'s failure.
  StatusOr<std::shared_ptr<Session>> Open(const std::string& owner, const Opener& open) {
    {
      std::lock_guard lock(mu_);
      const int n = OpenLocked(owner) + opening_[owner];
      if (n >= per_caller_) {
        if (opening_[owner] == 0) opening_.erase(owner);
        return ResourceExhausted("this caller has " + std::to_string(n) + " sessions open, its " +
                                 "limit (--sessions-per-caller " + std::to_string(per_caller_) +
                                 "): close one, or wait until one expires");
      }
      ++opening_[owner];
    }
    StatusOr<std::shared_ptr<Session>> opened = open();
    std::lock_guard lock(mu_);
    if (--opening_[owner] == 0) opening_.erase(owner);
    if (opened.ok()) open_[owner].push_back(*opened);
    return opened;
  }

  // The owner's sessions open now (forgetting the ones that are not).
  int OpenCount(const std::string& owner) {
    std::lock_guard lock(mu_);
    return OpenLocked(owner);
  }

 private:
  int OpenLocked(const std::string& owner) {
    auto it = open_.find(owner);
    if (it == open_.end()) return 0;
    std::erase_if(it->second, [](const std::weak_ptr<Session>& w) {
      auto s = w.lock();
      return !s || s->closed();
    });
    const int n = static_cast<int>(it->second.size());
    if (n == 0) open_.erase(it);
    return n;
  }

  const int per_caller_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::weak_ptr<Session>>> open_;
  std::map<std::string, int> opening_;
};

}  // namespace codeact::internal
