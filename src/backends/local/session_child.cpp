#include "backends/local/session_child.hpp"

#include <algorithm>
#include <thread>

#include "backends/run_outcome.hpp"
#include "bridge/host_loop.hpp"
#include "common/status_macros.hpp"
#include "files/mount_capture.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

// How often a run's CPU time and wall clock are checked: the most a run overshoots either.
constexpr std::chrono::milliseconds kWatchInterval{10};
constexpr std::chrono::milliseconds kFreezeTimeout{5'000};

class LocalSession final : public ExecutorSession {
 public:
  explicit LocalSession(LocalSessionConfig config) : config_(std::move(config)) {}
  ~LocalSession() override { Close(); }

  ExecutionResult Execute(const ExecutionRequest& request) override {
    std::lock_guard run(run_mu_);
    ExecutionResult r = RunLocked(request);
    config_.add_notes(r);
    return r;
  }

  Status Pause() override {
    std::lock_guard lock(mu_);
    if (closed_) return FailedPrecondition("the session is closed");
    if (paused_since_) return Status::Ok();
    paused_since_ = Clock::now();
    if (Status s = ApplyFreezeLocked(); !s.ok()) {
      paused_since_.reset();
      return s;
    }
    return Status::Ok();
  }

  Status Resume() override {
    std::lock_guard lock(mu_);
    if (closed_) return FailedPrecondition("the session is closed");
    if (!paused_since_) return Status::Ok();
    const auto since = *paused_since_;
    paused_since_.reset();
    // Between calls the group stays frozen: only a run in flight is thawed.
    if (Status s = ApplyFreezeLocked(); !s.ok()) {
      paused_since_ = since;
      return s;
    }
    paused_total_ += Clock::now() - since;
    return Status::Ok();
  }

  bool paused() const override {
    std::lock_guard lock(mu_);
    return paused_since_.has_value();
  }

  void Close() override {
    std::shared_ptr<SessionChild> child;
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      child = std::move(child_);
    }
    if (child) Kill(*child);  // a run in flight ends now
    child.reset();
    std::lock_guard run(run_mu_);  // ... and drops the last reference: everything is removed
  }

 private:
  // Kills the group; a frozen process dies only once thawed.
  void Kill(SessionChild& child) {
    child.cgroup->KillAll();
    std::lock_guard freeze(freeze_mu_);
    if (child.freezer && child.freezer->frozen()) (void)child.freezer->Thaw();
  }

  // Under mu_: freezes or thaws the child's group as the state asks: frozen unless a run is in
  // flight and the session is not paused.
  Status ApplyFreezeLocked() {
    if (!child_ || !child_->freezer) return Status::Ok();
    const bool want = paused_since_.has_value() || !in_run_;
    std::lock_guard freeze(freeze_mu_);
    if (want == child_->freezer->frozen()) return Status::Ok();
    return want ? child_->freezer->Freeze(kFreezeTimeout) : child_->freezer->Thaw();
  }

  // Time since `start` with the time paused since then taken out.
  Clock::duration ActiveSince(Clock::time_point start, Clock::duration paused_at_start) const {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    Clock::duration paused = paused_total_ - paused_at_start;
    if (paused_since_) paused += now - std::max(*paused_since_, start);
    return now - start - paused;
  }

  // The child that serves this run: the session's, or a new one (the state says which).
  StatusOr<std::shared_ptr<SessionChild>> ChildForRun(SessionState& state, std::string& note) {
    std::shared_ptr<SessionChild> child;
    {
      std::lock_guard lock(mu_);
      if (closed_) return FailedPrecondition("the session is closed");
      child = child_;
    }
    if (child && child->child->TryWait()) {
      ended_because_ = "its interpreter had exited since the last run";
      Drop(child);
    }
    if (child) {
      state = SessionState::kKept;
      return child;
    }
    CODEACT_ASSIGN_OR_RETURN(child, config_.start());
    state = started_before_ ? SessionState::kRestarted : SessionState::kNew;
    if (started_before_) {
      note = "a new interpreter for the session: the last one ended (" + ended_because_ +
             "), and the globals, imports and files of the earlier runs with it";
    }
    started_before_ = true;
    std::lock_guard lock(mu_);
    if (closed_) return FailedPrecondition("the session is closed");
    child_ = child;
    if (Status s = ApplyFreezeLocked(); !s.ok()) {  // frozen until the run starts
      ended_because_ = "it could not be frozen: " + s.message();
      child_.reset();
      return s;
    }
    return child;
  }

  // Marks a run of `child` in flight or not, and thaws or freezes its group accordingly.
  Status SetInRun(const std::shared_ptr<SessionChild>& child, bool in_run) {
    std::lock_guard lock(mu_);
    if (child_ != child) return Status::Ok();  // closed meanwhile: the group is being killed
    in_run_ = in_run;
    return ApplyFreezeLocked();
  }

  // Ends `child`: it is no longer the session's, and it dies with the last reference.
  void Drop(std::shared_ptr<SessionChild>& child) {
    {
      std::lock_guard lock(mu_);
      if (child_ == child) child_.reset();
    }
    Kill(*child);
    child.reset();
  }

  // Why `request` cannot run in this session now; nothing when it can.
  std::optional<ExecutionResult> Refusal(const ExecutionRequest& request) {
    if (request.validate_in_child) {
      return NotRunResult(Outcome::kSetupError,
                          "a session's runs are validated in the host, not in its interpreter");
    }
    if (request.cancel.cancelled()) {
      return NotRunResult(Outcome::kCancelled, CancelledMessage(request.cancel.reason()));
    }
    std::lock_guard lock(mu_);
    if (paused_since_) {
      return NotRunResult(Outcome::kSetupError, "the session is paused: resume it first");
    }
    return std::nullopt;
  }

  // How the host loop of a run ended, and which limit the watcher saw first.
  struct WatchedEnd {
    LoopResult ended;
    std::optional<Outcome> limit_hit;
    std::int64_t cpu_used_ms = 0;
  };

  // Runs `request.code` through `loop` while a watcher holds the run to the wall clock (paused
  // time left out) and to the CPU time the group used since `before`.
  WatchedEnd RunWatched(HostLoop& loop, SessionChild& child, const ExecutionRequest& request,
                        const ExecutionLimits& limits, const CgroupUsage& before,
                        const std::optional<RuntimeGuardSpec>& guard) {
    const std::int64_t cpu_limit_ms = limits.cpu_time_s * 1000;

    // The wall clock and the CPU time are the watcher's: the host loop's own deadline cannot
    // leave paused time out. It stops the loop through `stop`, as the caller's token does.
    CancellationSource stop;
    CancellationRegistration forward = request.cancel.OnCancel([&stop] { stop.Cancel(""); });
    std::mutex watch_mu;
    std::condition_variable watch_cv;
    bool done = false;
    WatchedEnd end;
    const auto start = Clock::now();
    Clock::duration paused_at_start;
    {
      std::lock_guard lock(mu_);
      paused_at_start = paused_total_;
    }
    std::thread watcher([&] {
      std::unique_lock lock(watch_mu);
      while (!watch_cv.wait_for(lock, kWatchInterval, [&] { return done; })) {
        if (ActiveSince(start, paused_at_start) >=
            std::chrono::milliseconds(limits.wall_timeout_ms)) {
          end.limit_hit = Outcome::kTimeout;
        } else if (const CgroupUsage now = child.cgroup->Usage(); now.cpu_ms && before.cpu_ms) {
          end.cpu_used_ms = *now.cpu_ms - *before.cpu_ms;
          if (end.cpu_used_ms >= cpu_limit_ms) end.limit_hit = Outcome::kCpuLimit;
        }
        if (end.limit_hit) {
          stop.Cancel("limit");
          return;
        }
      }
    });
    // Far beyond any wall clock: the watcher ends the run first.
    const auto no_deadline = start + std::chrono::hours(24 * 365);
    end.ended =
        loop.Run(request.code, no_deadline, /*child_ready=*/true,
                 {guard ? &*guard : nullptr, /*bridge_closes_after_run=*/false}, stop.token());
    {
      std::lock_guard lock(watch_mu);
      done = true;
    }
    watch_cv.notify_all();
    watcher.join();
    forward = CancellationRegistration();
    return end;
  }

  // A run that did not end clean, or whose interpreter could not be frozen after it, ends the
  // interpreter, and its result says so.
  void DropAfterRun(std::shared_ptr<SessionChild>& child, bool clean,
                    const std::string& freeze_failed, ExecutionResult& r) {
    if (!clean || (r.outcome != Outcome::kOk && r.outcome != Outcome::kError)) {
      ended_because_ = "a run ended as " + std::string(OutcomeName(r.outcome));
    } else if (!freeze_failed.empty()) {
      // What cannot be stopped between calls does not stay.
      ended_because_ = "it could not be frozen after a run: " + freeze_failed;
    } else {
      return;
    }
    Drop(child);
    r.message += std::string(r.message.empty() ? "" : "; ") +
                 "the session's interpreter was ended; the next run starts a new one";
  }

  // The snapshot's tools; an approved run's need no approval.
  std::vector<HostTool> ToolsFor(const ExecutionRequest& request) const {
    std::vector<HostTool> tools = config_.snapshot.tools;
    if (request.tools_approved) {
      for (auto& tool : tools) tool.requires_approval = false;
    }
    return tools;
  }

  ExecutionResult RunLocked(const ExecutionRequest& request) {
    if (auto refused = Refusal(request)) return std::move(*refused);
    SessionState state = SessionState::kKept;
    std::string note;
    auto ready = ChildForRun(state, note);
    if (!ready.ok()) return NotRunResult(Outcome::kSetupError, ready.status().message());
    std::shared_ptr<SessionChild> child = std::move(*ready);

    const ExecutionLimits& limits = config_.snapshot.limits;
    Child& process = *child->child;
    const std::vector<HostTool> tools = ToolsFor(request);  // the loop holds a reference
    HostLoop loop({process.stdout_fd(), process.stderr_fd(), process.bridge_to_child_fd(),
                   process.bridge_from_child_fd()},
                  tools, limits);
    loop.StreamOutputTo(request.on_output);
    const std::optional<RuntimeGuardSpec> guard = config_.guard(*child);
    // As a stateless run's: what this run wrote to read-write mounts is captured into its
    // result (what an earlier run wrote and left unchanged is not reported again).
    const CaptureLimits capture_limits = CaptureLimitsFor(limits);
    const MountSnapshot mounts_before =
        MountSnapshot::Take(config_.snapshot.mounts, capture_limits);
    // Read while the group is still frozen: whatever runs from the thaw on is this call's.
    const CgroupUsage before = child->cgroup->Usage();
    const std::int64_t oom_before = child->cgroup->OomKills();
    if (Status s = SetInRun(child, true); !s.ok()) {
      ended_because_ = "it could not be thawed: " + s.message();
      Drop(child);
      return NotRunResult(Outcome::kSetupError,
                          "cannot thaw the session's interpreter: " + s.message() +
                              "; the next run starts a new one");
    }
    WatchedEnd watched = RunWatched(loop, *child, request, limits, before, guard);
    LoopResult& ended = watched.ended;
    const std::optional<Outcome>& limit_hit = watched.limit_hit;

    // A run that ended with its own terminal frame leaves the interpreter ready for the next;
    // anything else (a limit, a crash, a broken bridge, a cancellation) ends it.
    const bool clean = ended.end == LoopEnd::kComplete || ended.end == LoopEnd::kUserError;
    ExitInfo exit{.exited = true, .exit_code = 0};
    bool oom_killed = false;
    std::string freeze_failed;
    if (clean) {
      // Nothing of the session runs from here to the next call, before its CPU time is read and
      // its files are captured: a thread the code left running stops with the run.
      if (Status s = SetInRun(child, false); !s.ok()) {
        freeze_failed = s.message();
        Kill(*child);  // before the capture: nothing writes after the run returned
        (void)child->cgroup->WaitUntilEmpty(kFreezeTimeout);
      }
      // The runner flushed stdout and stderr before its terminal frame.
      loop.DrainAvailableOutput();
    } else {
      Kill(*child);
      loop.DrainAvailableOutput();
      exit = process.Wait();
      oom_killed = child->cgroup->OomKills() > oom_before;
      if (limit_hit == Outcome::kTimeout) ended.end = LoopEnd::kTimeout;
      if (ended.end == LoopEnd::kCancelled) ended.message = request.cancel.reason();
    }
    const CgroupUsage after = child->cgroup->Usage();
    ExecutionResult r =
        ResultOfRun(loop, ended, exit, limits,
                    {"the session's interpreter", /*cpu_counts_from_start=*/false}, oom_killed);
    if (!clean && limit_hit == Outcome::kCpuLimit && !oom_killed) {
      r.outcome = Outcome::kCpuLimit;
      r.message = "CPU time limit of " + std::to_string(limits.cpu_time_s) +
                  " s exceeded (this run used " + std::to_string(watched.cpu_used_ms) + " ms)";
    }
    Capture capture = CaptureChanges(mounts_before, config_.snapshot.mounts, capture_limits);
    r.files = std::move(capture.files);
    r.omitted_files = std::move(capture.omitted);
    if (after.cpu_ms && before.cpu_ms) r.usage.cpu_ms = *after.cpu_ms - *before.cpu_ms;
    r.usage.peak_memory_bytes = after.peak_memory_bytes;  // the session's peak so far
    DropAfterRun(child, clean, freeze_failed, r);
    r.session_state = state;
    if (!note.empty()) r.message = note + (r.message.empty() ? "" : "; " + r.message);
    return r;
  }

  const LocalSessionConfig config_;
  std::mutex run_mu_;  // runs take turns
  mutable std::mutex mu_;
  std::mutex freeze_mu_;                 // the child's freezer
  std::shared_ptr<SessionChild> child_;  // null until the first run, and after one ends it
  bool closed_ = false;
  std::optional<Clock::time_point> paused_since_;
  Clock::duration paused_total_{};
  bool in_run_ = false;  // a run of child_ is in flight: its group runs unless paused
  // Under run_mu_:
  bool started_before_ = false;
  std::string ended_because_;
};

}  // namespace

SessionChild::~SessionChild() {
  if (!child) return;
  KillAll();
  child->Wait();
}

void SessionChild::KillAll() {
  if (cgroup) {
    cgroup->KillAll();
  } else {
    child->KillAll();
  }
  if (freezer && freezer->frozen()) (void)freezer->Thaw();
}

std::unique_ptr<ExecutorSession> NewLocalSession(LocalSessionConfig config) {
  return std::make_unique<LocalSession>(std::move(config));
}

std::int64_t SessionCpuBackstopSeconds(const ExecutionLimits& limits) {
  // The interpreter lives for many runs: an hour of CPU, or a hundred runs' worth, whichever is
  // more, before the kernel's SIGXCPU/SIGKILL ends it (the next run then restarts it).
  return std::max<std::int64_t>(3600, limits.cpu_time_s * 100);
}

}  // namespace codeact::internal
