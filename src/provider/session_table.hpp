// SessionTable: a provider's open sessions (session.hpp) — their number held to
// SessionSettings::max_sessions, and the thread that closes those unused for idle_expiry_ms.
// SessionCore is one open session's shared state, reached by its handle and by the table.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "codeact/executor.hpp"
#include "codeact/session.hpp"

namespace codeact::internal {

class SessionCore {
 public:
  SessionCore(std::string id, std::string name, std::unique_ptr<ExecutorSession> backend,
              RunSnapshot snapshot, std::uint64_t tools_version, std::int64_t idle_expiry_ms);
  ~SessionCore();  // Close("closed")

  const std::string& id() const { return id_; }
  const std::string& name() const { return name_; }
  const RunSnapshot& snapshot() const { return snapshot_; }
  std::uint64_t tools_version() const { return tools_version_; }
  std::chrono::system_clock::time_point created() const { return created_; }
  std::chrono::system_clock::time_point last_used() const;

  // Runs `body` on the backend while the session is open, the use counted from its end (a
  // session is never expired in the middle of a run); nullopt when it is closed.
  std::optional<ExecutionResult> Run(const std::function<ExecutionResult(ExecutorSession&)>& body);

  Status Pause();
  Status Resume();
  bool paused() const;

  // Kills and removes everything of the session (waits for a run in flight to end). The first
  // reason stays.
  void Close(const std::string& reason);
  bool closed() const;
  std::string closed_reason() const;
  bool expired() const;

  // When it expires (steady clock), or nullopt while a run is in flight or once closed.
  std::optional<std::chrono::steady_clock::time_point> ExpiresAt() const;

 private:
  const std::string id_;
  const std::string name_;
  const RunSnapshot snapshot_;
  const std::uint64_t tools_version_;
  const std::chrono::milliseconds idle_expiry_;
  const std::chrono::system_clock::time_point created_ = std::chrono::system_clock::now();
  const std::unique_ptr<ExecutorSession> backend_;  // thread-safe (ExecutorSession)
  mutable std::mutex mu_;
  std::chrono::system_clock::time_point last_used_ = created_;
  std::chrono::steady_clock::time_point last_used_steady_ = std::chrono::steady_clock::now();
  int runs_in_flight_ = 0;
  std::string closed_reason_;  // empty while open
  bool expired_ = false;
};

class SessionTable {
 public:
  explicit SessionTable(SessionSettings settings) : settings_(settings) {}
  ~SessionTable() { Shutdown(); }
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;

  const SessionSettings& settings() const { return settings_; }

  using Opener = std::function<StatusOr<std::unique_ptr<ExecutorSession>>()>;
  // A new open session of `open`'s backend, or RESOURCE_EXHAUSTED when max_sessions are open
  // (`open` is then not called), or `open`'s failure.
  StatusOr<std::shared_ptr<SessionCore>> Add(const std::string& name, RunSnapshot snapshot,
                                             std::uint64_t tools_version, const Opener& open);
  // The session is closed by its handle: its place is free.
  void Remove(const std::string& id);
  int OpenCount() const;
  // Tells the expiry thread that a session's deadline moved.
  void Touched();
  // Stops the expiry thread and closes every session left. Idempotent.
  void Shutdown();

 private:
  void ExpiryLoop();
  int OpenCountLocked() const;

  const SessionSettings settings_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, std::shared_ptr<SessionCore>> sessions_;
  int opening_ = 0;  // places reserved by Add while the backend opens
  bool stopping_ = false;
  std::thread expiry_;  // started with the first session
};

}  // namespace codeact::internal
