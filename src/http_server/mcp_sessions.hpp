// McpSessionTable: the MCP sessions of the HTTP service's /mcp (Streamable HTTP's
// Mcp-Session-Id), each owned by the caller whose `initialize` opened it. Bounded three ways, so
// that one caller cannot take the table from the others: `max_sessions` in all, `per_caller`
// for one owner (initializes in flight count), and `idle`: a session unused that long (from the
// end of its last request; never while one is in flight) is closed. A caller over its bound is
// refused, with the seconds until its own oldest session expires; another caller's session is
// never evicted to make room. Thread-safe. Entries are destroyed outside the lock (closing an
// MCP session closes its named execute_code sessions, which waits for their processes).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace codeact::internal {

class McpServer;

class McpSessionTable {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    std::size_t max_sessions = 1024;
    std::size_t per_caller = 256;  // at least 1
    std::chrono::milliseconds idle{600'000};
  };
  struct Entry {
    std::string owner;
    std::shared_ptr<McpServer> server;
    std::shared_ptr<void> state;  // what goes with the session (its named execute_code sessions)
  };
  struct Refusal {
    std::string reason;   // "mcp_sessions_per_caller" or "mcp_sessions_full"
    std::string message;  // for the 429 body
    int retry_after_s = 1;
  };
  // A place for one new session, given back when this goes unless Commit filled it.
  class Reservation {
   public:
    Reservation(McpSessionTable* table, std::string owner)
        : table_(table), owner_(std::move(owner)) {}
    ~Reservation() { table_->Release(owner_); }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;

   private:
    friend class McpSessionTable;
    McpSessionTable* table_;
    std::string owner_;
  };

  explicit McpSessionTable(Limits limits) : limits_(limits) {
    limits_.per_caller = std::max<std::size_t>(1, limits_.per_caller);
  }

  const Limits& limits() const { return limits_; }

  // A place for a session of `owner`, or why there is none.
  std::pair<std::shared_ptr<Reservation>, std::optional<Refusal>> Reserve(const std::string& owner,
                                                                          Clock::time_point now) {
    std::vector<Entry> expired;
    std::lock_guard lock(mu_);
    ExpireLocked(now, expired);
    std::size_t own = PendingLocked(owner);
    std::optional<Clock::time_point> soonest;
    for (const auto& [id, s] : sessions_) {
      if (s.entry.owner != owner) continue;
      ++own;
      if (s.in_flight == 0 && (!soonest || s.last_used < *soonest)) soonest = s.last_used;
    }
    const auto wait_s = [&](std::optional<Clock::time_point> since) {
      if (!since) return 1;
      const auto left = *since + limits_.idle - now;
      return std::max(1, static_cast<int>(std::chrono::ceil<std::chrono::seconds>(left).count()));
    };
    if (own >= limits_.per_caller) {
      return {nullptr, Refusal{"mcp_sessions_per_caller",
                               "this caller holds " + std::to_string(own) + " MCP sessions, its " +
                                   "limit: end one (DELETE /mcp) or let one expire after " +
                                   std::to_string(limits_.idle.count() / 1000) + " s unused",
                               wait_s(soonest)}};
    }
    if (sessions_.size() + pending_total_ >= limits_.max_sessions) {
      return {nullptr, Refusal{"mcp_sessions_full",
                               "the server holds " + std::to_string(limits_.max_sessions) +
                                   " MCP sessions; retry later",
                               wait_s(OldestIdleLocked())}};
    }
    ++pending_[owner];
    ++pending_total_;
    return {std::make_shared<Reservation>(this, owner), std::nullopt};
  }

  // Fills the reserved place with session `id` (its last use: now).
  void Commit(const std::shared_ptr<Reservation>& place, const std::string& id, Entry entry,
              Clock::time_point now) {
    std::lock_guard lock(mu_);
    (void)place;  // held by the caller until the session is in the table
    sessions_[id] = Slot{std::move(entry), now, 0};
  }

  // The server of the owner's session `id`, kept from expiring while `*in_use` lives; null for
  // an unknown, expired or another caller's id.
  std::shared_ptr<McpServer> Use(const std::string& id, const std::string& owner,
                                 Clock::time_point now, std::shared_ptr<void>* in_use) {
    std::vector<Entry> expired;
    std::lock_guard lock(mu_);
    ExpireLocked(now, expired);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.entry.owner != owner) return nullptr;
    ++it->second.in_flight;
    *in_use = std::shared_ptr<void>(nullptr, [this, id](void*) { Done(id, Clock::now()); });
    return it->second.entry.server;
  }

  // Ends the owner's session `id`; false when there is none.
  bool Remove(const std::string& id, const std::string& owner) {
    Entry gone;
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.entry.owner != owner) return false;
    gone = std::move(it->second.entry);
    sessions_.erase(it);
    return true;
  }

  void Clear() {
    std::map<std::string, Slot> all;
    std::lock_guard lock(mu_);
    all.swap(sessions_);
  }

  std::size_t size() {
    std::lock_guard lock(mu_);
    return sessions_.size();
  }

 private:
  struct Slot {
    Entry entry;
    Clock::time_point last_used;
    int in_flight = 0;
  };

  void Release(const std::string& owner) {
    std::lock_guard lock(mu_);
    --pending_total_;
    if (--pending_[owner] == 0) pending_.erase(owner);
  }

  std::size_t PendingLocked(const std::string& owner) const {
    auto it = pending_.find(owner);
    return it == pending_.end() ? 0 : it->second;
  }

  void Done(const std::string& id, Clock::time_point now) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    --it->second.in_flight;
    it->second.last_used = now;
  }

  // Moves the sessions unused for `idle` to `out` (the caller destroys them after the lock).
  void ExpireLocked(Clock::time_point now, std::vector<Entry>& out) {
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second.in_flight == 0 && now - it->second.last_used >= limits_.idle) {
        out.push_back(std::move(it->second.entry));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::optional<Clock::time_point> OldestIdleLocked() const {
    std::optional<Clock::time_point> oldest;
    for (const auto& [id, s] : sessions_) {
      if (s.in_flight == 0 && (!oldest || s.last_used < *oldest)) oldest = s.last_used;
    }
    return oldest;
  }

  Limits limits_;
  std::mutex mu_;
  std::map<std::string, Slot> sessions_;
  std::map<std::string, std::size_t> pending_;  // places reserved and not yet given back
  std::size_t pending_total_ = 0;
};

}  // namespace codeact::internal
