// Session: one interpreter that keeps its globals across runs (CodeActProvider::OpenSession). A
// variable, an import or a file in /work or /tmp from one run is still there in the next one of
// the same session, and in no other session and no stateless run: each session is one sandboxed
// child of its own, with its own working directory, /tmp and cgroup, serving run after run.
//
// Lifecycle: open -> Execute... -> (Pause -> Resume)... -> Close; or expired after
// SessionSettings::idle_expiry_ms without use (paused or not), which closes it the same way.
// What a session is held to (docs/sessions.md):
//   per run      wall clock (paused time excluded), CPU time (measured by the session's cgroup
//                and renewed for every run), output caps, tool budget;
//   per session  memory (its cgroup) and the working directory's size;
//   per provider the number of open sessions and their memory together (a parent cgroup).
// A run that hits a limit, or kills the interpreter, ends that interpreter: the next run starts a
// fresh one and says so (`session_state` "restarted"). The configuration (tools, mounts, limits,
// environment, policy) is the provider's snapshot when the session opened; after the provider's
// tool registry changes, runs are refused until a new session is opened.
//
// Sessions need an isolation level where nothing crosses them: the namespaces level, or the
// process level on a root host (each child its own uid). Elsewhere OpenSession fails with the
// reason, as it does where no memory cgroup can be made for the total budget.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "codeact/execution.hpp"
#include "codeact/status.hpp"

namespace codeact {

struct InvokeOptions;  // provider.hpp

// A provider's settings for its sessions (ProviderOptions::sessions).
struct SessionSettings {
  // A session unused for this long (from the end of its last run, paused or not) is closed and
  // its processes, directories and cgroup removed.
  std::int64_t idle_expiry_ms = 600'000;
  // Open sessions per provider. One more is refused (RESOURCE_EXHAUSTED, with the reason) rather
  // than evict another client's session: close one, or wait for one to expire.
  int max_sessions = 16;
  // The memory of all the provider's sessions together: a parent memory cgroup over their
  // groups. A session's own bound is ExecutionLimits::memory_bytes.
  std::int64_t total_memory_bytes = 4LL << 30;
};

struct SessionOptions {
  // Shown in each result's `session`; empty: the session's id. At most 128 bytes.
  std::string name;
};

class Session {
 public:
  virtual ~Session() = default;  // closes the session

  virtual const std::string& id() const = 0;    // unique within the process
  virtual const std::string& name() const = 0;  // SessionOptions::name, or the id
  virtual std::chrono::system_clock::time_point created() const = 0;
  virtual std::chrono::system_clock::time_point last_used() const = 0;

  // One run in the session's interpreter: approval, validation, then the run, as
  // CodeActProvider::Execute. The result carries `session` and `session_state`. Runs of one
  // session take turns. A closed, expired or paused session, or one whose provider's tool
  // registry changed, runs nothing (setup_error with the reason).
  virtual ExecutionResult Execute(const std::string& code) = 0;
  virtual ExecutionResult Execute(const std::string& code, const InvokeOptions& options) = 0;

  // Freezes every process of the session (its cgroup's freezer): no CPU is used, the state is
  // kept, and a run in flight keeps the rest of its wall-clock budget. FAILED_PRECONDITION where
  // this host has no cgroup freezer, or when the session is closed.
  virtual Status Pause() = 0;
  virtual Status Resume() = 0;
  virtual bool paused() const = 0;

  // Kills every process of the session and removes its directories and cgroup. Idempotent.
  virtual void Close() = 0;
  virtual bool closed() const = 0;
  // Why it is closed: "closed", or "expired after N ms without use"; empty while open.
  virtual std::string closed_reason() const = 0;
  virtual bool expired() const = 0;
};

}  // namespace codeact
