// RestSessions: the sessions opened over the HTTP service's REST routes, by their random id, each
// owned by the caller that opened it (another caller's id is not found, as a made-up one is not).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codeact/session.hpp"

namespace codeact::internal {

struct RestSession {
  std::string id;
  std::string owner;
  std::shared_ptr<Session> session;
};

// REST sessions by their random id; each belongs to the caller (owner) that created it.
class RestSessions {
 public:
  void Add(RestSession s) {
    std::lock_guard lock(mu_);
    by_id_[s.id] = std::move(s);
  }
  // The caller's open session `id`; nothing for another caller's, a closed or an expired one
  // (those are forgotten here).
  std::shared_ptr<Session> Find(const std::string& id, const std::string& owner) {
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end() || it->second.owner != owner) return nullptr;
    if (it->second.session->closed()) {
      by_id_.erase(it);
      return nullptr;
    }
    return it->second.session;
  }
  std::shared_ptr<Session> Remove(const std::string& id, const std::string& owner) {
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end() || it->second.owner != owner) return nullptr;
    auto session = it->second.session;
    by_id_.erase(it);
    return session;
  }
  std::vector<RestSession> List(const std::string& owner) {
    std::lock_guard lock(mu_);
    std::vector<RestSession> out;
    for (auto it = by_id_.begin(); it != by_id_.end();) {
      if (it->second.session->closed()) {
        it = by_id_.erase(it);
        continue;
      }
      if (it->second.owner == owner) out.push_back(it->second);
      ++it;
    }
    return out;
  }
  void CloseAll() {
    std::map<std::string, RestSession> all;
    {
      std::lock_guard lock(mu_);
      all.swap(by_id_);
    }
    for (auto& [id, s] : all) s.session->Close();
  }

 private:
  std::mutex mu_;
  std::map<std::string, RestSession> by_id_;
};

}  // namespace codeact::internal
