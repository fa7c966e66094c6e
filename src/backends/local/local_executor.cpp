#include "backends/local/local_executor.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <optional>

#include "backends/local/admission.hpp"
#include "backends/local/child_starter.hpp"
#include "backends/local/guard_plan.hpp"
#include "backends/local/local_setup.hpp"
#include "backends/local/process_level_identity.hpp"
#include "backends/local/reaper.hpp"
#include "backends/local/run_disk_bounds.hpp"
#include "backends/local/runner_files.hpp"
#include "backends/local/sandbox_plan.hpp"
#include "backends/local/session_child.hpp"
#include "backends/run_outcome.hpp"
#include "bridge/host_loop.hpp"
#include "codeact/validator.hpp"
#include "common/data_dir.hpp"
#include "common/status_macros.hpp"
#include "egress/egress_tools.hpp"
#include "files/mount_capture.hpp"
#include "limits/limit_table.hpp"
#include "os/errno_status.hpp"
#include "os/proc_tasks.hpp"
#include "os/resource_limits.hpp"
#include "os/unique_fd.hpp"
#include "process/child.hpp"
#include "process/fork_server.hpp"
#include "process/run_cgroup.hpp"
#include "process/session_cgroups.hpp"
#include "process/uid_lease.hpp"
#include "protocol/bridge_fds.hpp"
#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Time allowed to read what the child printed after its processes are dead.
constexpr std::chrono::milliseconds kDrainGrace{500};

Status CheckPoolAndLevel(const ExecutorOptions& options) {
  if (options.warm_pool_size < 0 || options.warm_pool_size > 64) {
    return InvalidArgument("warm_pool_size must be between 0 and 64");
  }
  if (options.pool_idle_timeout_ms <= 0)
    return InvalidArgument("pool_idle_timeout_ms must be positive");
  if (options.isolation == IsolationLevel::kMicroVm) {
    return InvalidArgument(
        "the local backend runs at the process or namespaces level, not microvm");
  }
  return Status::Ok();
}

// kAuto: the namespaces level where this kernel allows it, else the process level (with a note
// in `fallback_note`). An explicit level runs as asked or not at all.
StatusOr<std::optional<SandboxPlan>> ChooseSandbox(IsolationLevel isolation,
                                                   const std::string& python,
                                                   const std::string& runner_dir,
                                                   std::string& fallback_note) {
  if (isolation == IsolationLevel::kProcess) return std::optional<SandboxPlan>();
  std::optional<SandboxPlan> sandbox;
  Status ready = [&]() -> Status {
    auto plan = PlanSandbox(python, runner_dir);
    if (!plan.ok()) return plan.status();
    if (Status s = ProbeSandbox(*plan, python); !s.ok()) return s;
    sandbox = std::move(*plan);
    return Status::Ok();
  }();
  if (!ready.ok() && isolation == IsolationLevel::kNamespaces) {
    return Unavailable("the namespaces isolation level is not available here: " + ready.message());
  }
  if (!ready.ok()) {
    // auto never drops a level silently: the log says so, and so do the executor's
    // environment notes (selftest, describe --measure).
    fallback_note =
        "isolation auto: ran at the process level; the namespaces level is not available here: " +
        ready.message();
  }
  return sandbox;
}

// A run whose disk watch ended it, or whose last walk found a tree past its bound after a run
// that ended otherwise by itself (ok, error, or killed), is `disk_limit`, and nothing is captured
// (a limit's run returns no files). True when it is.
bool EndsAsDiskLimit(const std::string& over_disk, bool watch_ended_run, ExecutionResult& r) {
  if (over_disk.empty()) return false;
  const bool by_itself =
      r.outcome == Outcome::kOk || r.outcome == Outcome::kError || r.outcome == Outcome::kKilled;
  if (!watch_ended_run && !by_itself) return false;
  r.outcome = Outcome::kDiskLimit;
  r.message = over_disk +
              "; the run was ended, and what it wrote to read-write mounts until then stays there";
  r.output_present = false;
  r.output_json = "null";
  r.error.reset();
  return true;
}

// What runs: each run takes a started child (ChildStarter), once the admission has let it
// start, sends it the code and serves its bridge until it ends, then ends its processes and
// captures what it wrote.
class LocalExecutor final : public Executor {
 public:
  LocalExecutor(LocalSetup setup, const ExecutorOptions& options,
                std::optional<TempDir> bytecode_dir, bool use_cache)
      : setup_(std::move(setup)),
        egress_enabled_(options.egress.enabled),
        admission_(setup_, options),
        starter_(setup_, options, std::move(bytecode_dir), use_cache) {}

  Admission& admission() { return admission_; }
  const Admission& admission() const { return admission_; }
  const ChildStarter& starter() const { return starter_; }
  RuntimeGuardStatus GuardStatus() const {
    return setup_.guard
               ? RuntimeGuardStatus{true, setup_.guard->landlock_abi, requests_as_armed_.load()}
               : RuntimeGuardStatus{};
  }

  BackendKind backend() const override { return BackendKind::kLocal; }
  IsolationLevel isolation() const override { return setup_.isolation(); }
  BackendTraits Traits(const RunSnapshot& snapshot) const override {
    BackendTraits t;
    t.host_paths_visible = !setup_.sandbox;
    t.fresh_start = "every call starts a fresh interpreter.";
    // Egress is the host's (egress/), at both levels: the child itself has no network.
    t.network_targets = egress_enabled_;
    if (t.network_targets && !snapshot.network_targets.empty()) {
      t.network = DescribeEgress(snapshot.network_targets);
      t.network_tools.assign(kEgressToolNames.begin(), kEgressToolNames.end());
    }
    t.validates_in_child = setup_.validate_in_child;
    t.overlaps_validation = true;
    t.isolation_meaning =
        setup_.sandbox ? "Own namespaces: only its own files and processes."
        : setup_.guard ? "A confined host process: no network or new processes, writes only to "
                         "its own directories; host file metadata is visible."
                       : "A host process under its limits only.";
    return t;
  }

  ExecutionResult Execute(const ExecutionRequest& request, const RunSnapshot& snapshot) override {
    // What only this executor knows; the backend, the level and the duration are the
    // provider's to stamp (provider/result_stamp.hpp).
    ExecutionResult result = Run(request, snapshot, Clock::now());
    starter_.RunEnded();  // the refill for the child this run took may start now
    if (std::string note = OpenFilesNote(snapshot.limits); !note.empty()) {
      result.message = result.message.empty() ? note : result.message + "; " + note;
    }
    // The host's rejection reached no interpreter; the child's names the one that validated.
    if (result.outcome != Outcome::kValidationFailed || request.validate_in_child)
      result.interpreter = setup_.python;
    return result;
  }

  // Sessions (session_child.hpp): a child of their own, started cold, never pooled or forked.
  StatusOr<std::unique_ptr<ExecutorSession>> OpenSession(const RunSnapshot& snapshot,
                                                         const SessionSettings& settings) override {
    if (!setup_.sandbox && !setup_.own_uids) {
      return Unavailable(
          "sessions need the namespaces level, or the process level on a root host (each child "
          "its own uid), so that nothing crosses sessions; here the process level runs every "
          "child as uid " +
          std::to_string(::getuid()) +
          ", so one session could reach another's processes and files");
    }
    std::optional<std::vector<std::string>> imports;
    if (auto refused =
            admission_.RefuseRun(ExecutionRequest{}, snapshot, StageValidator(), imports)) {
      return FailedPrecondition(refused->message);
    }
    CODEACT_ASSIGN_OR_RETURN(std::shared_ptr<SessionParentGroup> parent,
                             starter_.SessionParent(settings));
    LocalSessionConfig config;
    config.snapshot = snapshot;
    config.snapshot.tools = admission_.ToolsForRun(snapshot);
    config.start = [this, snapshot, parent] { return starter_.StartSession(snapshot, parent); };
    config.guard = [this, snapshot, imports](const SessionChild& c) {
      std::optional<RuntimeGuardSpec> spec;
      if (!setup_.guard) return spec;
      spec =
          GuardSpecForRun(*setup_.guard, snapshot, c.workdir->path(), setup_.sandbox.has_value());
      spec->imports = imports.value_or(std::vector<std::string>{});
      return spec;
    };
    config.add_notes = [limits = snapshot.limits](ExecutionResult& r) {
      if (std::string note = OpenFilesNote(limits); !note.empty())
        r.message += (r.message.empty() ? "" : "; ") + note;
    };
    return NewLocalSession(std::move(config));
  }

  void Warm(const RunSnapshot& snapshot) override {
    if (!CheckLimits(snapshot.limits).ok() || !admission_.Unenforceable(snapshot.limits).ok())
      return;
    starter_.Warm(snapshot);
    // While the child starts; a failure (or no package to stage) is the run's to report.
    (void)starter_.StageValidator();
  }

 private:
  std::function<Status()> StageValidator() {
    return [this] { return starter_.StageValidator(); };
  }

  ExecutionResult Run(const ExecutionRequest& request, const RunSnapshot& snapshot,
                      Clock::time_point start) {
    const ExecutionLimits& limits = snapshot.limits;
    std::optional<std::vector<std::string>> imports;
    if (std::optional<ExecutionResult> refused =
            admission_.RefuseRun(request, snapshot, StageValidator(), imports))
      return std::move(*refused);
    StatusOr<ReadyChild> ready = starter_.TakeOrStart(snapshot, imports ? &*imports : nullptr);
    if (!ready.ok()) return NotRunResult(Outcome::kSetupError, ready.status().message());
    const CaptureLimits capture_limits = CaptureLimitsFor(limits);
    // The disk watch (run_disk_bounds.hpp) ends the run through `stop`, as the caller's cancel.
    CancellationSource stop;
    const CancellationRegistration forward =
        request.cancel.OnCancel([&] { stop.Cancel(request.cancel.reason()); });
    std::atomic<bool> watch_ended_run{false};
    BeforeCode made;
    const std::function<std::optional<LoopResult>()> gate = [&] {
      std::optional<LoopResult> end = PrepareBeforeCode(
          request, snapshot, ready->workdir.path(), capture_limits,
          [&](const std::string& over) {
            if (stop.Cancel(over)) watch_ended_run = true;
          },
          made);
      starter_.TellRefills();  // the request is written, the verdict is ready
      return end;
    };
    const std::unique_ptr<Child>& child = ready->child;

    const std::vector<HostTool> tools = admission_.ToolsForRun(snapshot);
    HostLoop loop({child->stdout_fd(), child->stderr_fd(), child->bridge_to_child_fd(),
                   child->bridge_from_child_fd()},
                  tools, limits);
    loop.StreamOutputTo(request.on_output);
    const auto deadline = start + std::chrono::milliseconds(limits.wall_timeout_ms);
    std::optional<RuntimeGuardSpec> guard;
    const ValidationPolicy* validate =
        request.validate_in_child ? &*request.validate_in_child : nullptr;
    if (setup_.guard) {
      guard = GuardSpecForRun(*setup_.guard, snapshot, ready->workdir.path(),
                              setup_.sandbox.has_value());
      guard->imports = std::move(imports).value_or(std::vector<std::string>{});
    }
    const bool as_armed = !validate && guard && ready->guard_ahead == guard;
    if (as_armed) requests_as_armed_.fetch_add(1, std::memory_order_relaxed);
    LoopResult ended = loop.Run(request.code, deadline, ready->ready_frame_read,
                                {guard ? &*guard : nullptr, /*bridge_closes_after_run=*/true,
                                 validate, &gate, &ready->wake, as_armed},
                                stop.token());
    const ChildEnd end = ended.end == LoopEnd::kComplete || ended.end == LoopEnd::kUserError ||
                                 ended.end == LoopEnd::kOutputLimit ||
                                 ended.end == LoopEnd::kRejected
                             ? EndAfterTerminalFrame(*ready, loop)
                             : EndWithoutTerminalFrame(*ready, loop, ended, deadline, stop.token());
    // And a last walk, the processes killed. No watch: the loop ended before its gate.
    const std::string over_disk = made.watch ? made.watch->Stop() : "";
    reaper_.Finish(
        std::move(*ready));  // the exits of the rest and the removals, off the caller's path
    // The verdict (the child's, or the host's while the child compiled) came before any code: the
    // result is the provider's own rejection.
    if (ended.end == LoopEnd::kRejected)
      return RejectedResult(std::move(ended.violations), ended.message);

    ExecutionResult r =
        ResultOfRun(loop, ended, end.exit, limits, {"the interpreter"}, end.oom_killed);
    if (end.usage) {
      r.usage.cpu_ms = end.usage->cpu_ms;
      r.usage.peak_memory_bytes = end.usage->peak_memory_bytes;
    }
    // The provider fits the result to its budget (result_budget.hpp).
    if (EndsAsDiskLimit(over_disk, watch_ended_run, r) || !made.mounts) return r;
    Capture capture = CaptureChanges(*made.mounts, snapshot.mounts, capture_limits);
    r.files = std::move(capture.files);
    r.omitted_files = std::move(capture.omitted);
    return r;
  }

  // What must be in place before any of a run's code runs.
  struct BeforeCode {
    std::optional<MountSnapshot> mounts;  // for the capture of what the run changed
    std::unique_ptr<DiskWatch> watch;     // the run's disk bounds (run_disk_bounds.hpp)
  };

  // The run's gate (RunExtras::gate), called once the request is written, while the child
  // compiles the code: the mounts' snapshot and the disk watch into `made`, then the provider's
  // validation (ExecutionRequest::host_verdict). The run's end instead, when one fails.
  std::optional<LoopResult> PrepareBeforeCode(const ExecutionRequest& request,
                                              const RunSnapshot& snapshot,
                                              const std::string& workdir,
                                              const CaptureLimits& capture_limits,
                                              std::function<void(const std::string&)> on_limit,
                                              BeforeCode& made) const {
    made.mounts = MountSnapshot::Take(snapshot.mounts, capture_limits);
    auto started = DiskWatch::Start(
        RunDiskBounds(snapshot, workdir, setup_.sandbox.has_value(), setup_.scratch_in_memory),
        std::move(on_limit));
    LoopResult end;
    if (!started.ok()) {
      end.end = LoopEnd::kSetupError;
      end.message = started.status().message();
      return end;
    }
    made.watch = std::move(*started);
    if (!request.host_verdict) return std::nullopt;
    ValidationReport report = request.host_verdict();
    if (report.ok) return std::nullopt;
    end.end = LoopEnd::kRejected;
    end.violations = std::move(report.violations);
    return end;
  }

  // How a run's child ended, as far as the caller waits for it.
  struct ChildEnd {
    ExitInfo exit;
    std::optional<CgroupUsage> usage;
    bool oom_killed = false;
  };

  // The runner flushed stdout and stderr before its terminal frame, so all the output is in the
  // pipes already. Kill the process group now; the cgroup's kill (or the sweep), the reaping and
  // the directory removal happen off the caller's path (the reaper).
  static ChildEnd EndAfterTerminalFrame(ReadyChild& ready, HostLoop& loop) {
    ChildEnd end;
    ready.child->KillGroup();
    loop.DrainAvailableOutput();
    if (ready.cgroup) end.usage = ready.cgroup->Usage();
    return end;
  }

  // The bridge closed without a terminal frame: usually the child is dying. Give it until the
  // deadline, so that one which merely closed its bridge and went on ends as a timeout. Then
  // (timeout, cancellation, crash or protocol error) everything is killed, now, and the exit
  // status classifies it; `ended` says which.
  static ChildEnd EndWithoutTerminalFrame(ReadyChild& ready, HostLoop& loop, LoopResult& ended,
                                          Clock::time_point deadline,
                                          const CancellationToken& cancel) {
    Child& child = *ready.child;
    bool timed_out = ended.end == LoopEnd::kTimeout;
    bool cancelled = ended.end == LoopEnd::kCancelled;
    if (ended.end == LoopEnd::kChildClosed && !WaitForExit(child, deadline, cancel)) {
      cancelled = cancel.cancelled();
      timed_out = !cancelled;
    }
    ready.KillAll();
    if (ready.cgroup) {
      // Every process of the run has SIGKILL pending and can write nothing more: what it wrote
      // is in the pipes. Waiting for EOF would wait for the exits of all of them (seconds, after
      // a fork storm).
      loop.DrainAvailableOutput();
    } else {
      loop.DrainOutput(kDrainGrace);
    }
    ChildEnd end;
    if ((timed_out || cancelled) && ready.cgroup) {
      // Killed by the cgroup with the rest of the run; its exit (a long one, for an interpreter
      // that forked a thousand copies of itself) is the reaper's to wait for.
      end.exit =
          child.TryWait().value_or(ExitInfo{.exited = false, .exit_code = -1, .signal = SIGKILL});
    } else {
      end.exit = child.Wait();
    }
    if (timed_out) ended.end = LoopEnd::kTimeout;
    if (cancelled) {
      ended.end = LoopEnd::kCancelled;
      ended.message = cancel.reason();
    }
    if (ready.cgroup) {
      end.usage = ready.cgroup->Usage();
      end.oom_killed = ready.cgroup->OomKills() > 0;
    } else {
      end.usage = CgroupUsage{static_cast<std::int64_t>(end.exit.cpu_seconds * 1000), std::nullopt};
    }
    return end;
  }

  const LocalSetup setup_;     // first: the admission and the starter keep a reference
  const bool egress_enabled_;  // ExecutorOptions::egress.enabled
  Admission admission_;
  Reaper reaper_;  // destroyed after the starter's pool: children are finished last
  ChildStarter starter_;
  std::atomic<std::int64_t> requests_as_armed_{0};  // RuntimeGuardStatus::requests_as_armed
};

}  // namespace

TaskThread& PrestartThread() {
  static TaskThread thread(1);
  return thread;
}

std::vector<pid_t> IdleChildPids(const Executor& executor, const RunSnapshot* snapshot) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->starter().IdlePids(snapshot) : std::vector<pid_t>{};
}

std::vector<pid_t> ForkServerPids(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->starter().ZygotePids() : std::vector<pid_t>{};
}

std::vector<std::string> EnvironmentNotes(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->admission().EnvironmentNotes() : std::vector<std::string>{};
}

std::vector<LimitMechanism> LimitMechanisms(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->admission().LimitMechanisms() : std::vector<LimitMechanism>{};
}

RuntimeGuardStatus GuardStatus(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->GuardStatus() : RuntimeGuardStatus{};
}

WarmPoolCounters PoolCounters(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->starter().PoolCounters() : WarmPoolCounters{};
}

StatusOr<std::unique_ptr<Executor>> CreateLocalExecutor(const ExecutorOptions& options) {
  // Nothing here starts the embedded interpreter when the caches hold what it would compute: a
  // one-shot run starts it in parallel, for the validation (cli/run_command.cpp).
  std::string python = options.python_path;
  if (python.empty()) python = EmbeddedInstallationInterpreter();
  if (python.empty()) {
    auto validator = Validator::Embedded();
    if (!validator.ok()) return validator.status();
    python = (*validator)->InstallationInterpreter();
  }
  const auto [major, minor] = EmbeddedPythonVersion();
  if (Status s = CheckInterpreterVersion(python, {major, minor}); !s.ok()) return s;
  auto runner = ResourceFile(options.resource_dir, "runner.py", "runner");
  if (!runner.ok()) return runner.status();
  if (Status s = CheckPoolAndLevel(options); !s.ok()) return s;
  std::string guard_module;
  if (options.runtime_guard) {
    guard_module = GuardModulePath();
    if (guard_module.empty()) {
      return FailedPrecondition(
          "the runtime guard module _codeact_guard.so was not found (build the codeact_guard "
          "target, or set "
          "CODEACT_GUARD_MODULE); ExecutorOptions::runtime_guard = false runs without the guard");
    }
  }
  // The per-user cache only where no run can write it: runs of their own uids (a root host), or
  // in the sandbox, which does not show it. An `auto` executor that falls back to the process
  // level on a non-root host has read it once; the runs it serves write nothing to it that a
  // later run of this host could use at another level (none is available here).
  RunnerFilesOptions files;
  files.use_cache = RunsNeedOwnUids() || options.isolation != IsolationLevel::kProcess;
  files.required = options.runtime_guard || (options.validate_in_child && files.use_cache);
  auto bytecode_dir = PrivateRunnerDir(*runner, files);
  if (!bytecode_dir.ok()) return bytecode_dir.status();
  const std::string runner_dir = std::filesystem::path(*runner).parent_path().string();
  std::string fallback_note;
  auto sandbox = ChooseSandbox(options.isolation, python, runner_dir, fallback_note);
  if (!sandbox.ok()) return sandbox.status();
  std::optional<GuardPlan> guard;
  if (options.runtime_guard) {
    auto plan = PlanGuard(python, runner_dir, guard_module, *sandbox ? &**sandbox : nullptr);
    if (!plan.ok()) return plan.status();
    guard = std::move(*plan);
  }
  auto executor = std::make_unique<LocalExecutor>(
      MakeLocalSetup(std::move(python), std::move(*runner), options, std::move(*sandbox),
                     std::move(guard), files.use_cache),
      options, std::move(*bytecode_dir), files.use_cache);
  executor->admission().AddLevelNote(std::move(fallback_note));
  return std::unique_ptr<Executor>(std::move(executor));
}

}  // namespace codeact::internal
