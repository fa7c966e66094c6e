#include "backends/local/local_executor.hpp"

#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "backends/local/guard_plan.hpp"
#include "backends/local/process_level_identity.hpp"
#include "backends/local/reaper.hpp"
#include "backends/local/run_disk_bounds.hpp"
#include "backends/local/runner_files.hpp"
#include "backends/local/sandbox_plan.hpp"
#include "backends/local/session_child.hpp"
#include "backends/local/warm_pool.hpp"
#include "backends/result_budget.hpp"
#include "backends/run_outcome.hpp"
#include "bridge/host_loop.hpp"
#include "codeact/validator.hpp"
#include "common/data_dir.hpp"
#include "common/egress_target.hpp"
#include "common/log.hpp"
#include "common/task_thread.hpp"
#include "egress/egress_tools.hpp"
#include "files/mount_capture.hpp"
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

constexpr const char* kNoLandlock =
    "runtime guard armed without Landlock (this kernel has none): its seccomp filter and audit "
    "hook hold; at the "
    "process level files and /proc are not fenced";

// Time allowed to read what the child printed after its processes are dead.
constexpr std::chrono::milliseconds kDrainGrace{500};
// How long a pooled child may take to load everything and report ready.
constexpr std::chrono::milliseconds kWarmStartTimeout{10'000};

// Everything that shapes a started child, so equal keys may share warm children: the
// interpreter, the isolation level, whether `site` loads, the environment, the rlimits and the
// mounts. This is the part of the config fingerprint (provider.hpp) a child depends on; tool
// names and the other limits travel in the request and are enforced by the host. And the tenant:
// a warm child, and a zygote whose forks share its hash seed and memory layout, serve one caller.
std::string StartKey(const std::string& python, IsolationLevel isolation, bool site_packages,
                     const RunSnapshot& s) {
  auto field = [](std::string_view v) { return std::to_string(v.size()) + ":" + std::string(v); };
  std::string key =
      field(python) + field(IsolationName(isolation)) + (site_packages ? "site" : "nosite");
  key += "|tenant" + field(s.tenant);
  for (const auto& [k, v] : s.environment) key += "|env" + field(k) + field(v);
  key += "|limits" + LimitKey(s.limits, /*child_only=*/true);
  for (const auto& m : s.mounts) {
    key += "|mount" + field(m.host_path) + field(m.mount_path) + field(MountModeName(m.mode)) +
           field(MountKindName(m.kind));
  }
  return key;
}

// The process level's scratch directory (guard_plan.hpp: work/ and tmp/) handed to a root
// host's per-run uid, which the child becomes before exec.
Status HandScratchTo(const std::string& scratch, uid_t uid) {
  for (const std::string& dir : {scratch, ProcessWorkDir(scratch), ProcessTmpDir(scratch)}) {
    if (::chown(dir.c_str(), uid, uid) != 0) return ErrnoStatus("chown " + dir, errno);
  }
  return Status::Ok();
}

// How this executor bounds the memory and process limits: a cgroup where one can be
// made; else, at the process level, what the runtime guard adds to the rlimits. `held` false:
// nothing here bounds it beyond the rlimit alone, and `alternative`/`why_not` say what would.
struct LimitBound {
  const char* limit;
  bool held = false;
  std::string mechanism;    // what bounds it, when held
  std::string alternative;  // the mechanism besides a cgroup that would, when not held
  std::string why_not;      // and why it is not here
};

// Whether the process level's scratch directory (work/ and tmp/, made in the host's temp
// directory) is on a tmpfs: what the run writes there is memory RLIMIT_AS does not see.
bool ScratchOnTmpfs() {
  std::error_code ec;
  const std::string dir = std::filesystem::temp_directory_path(ec).string();
  struct statfs info {};
  return !ec && ::statfs(dir.c_str(), &info) == 0 && info.f_type == TMPFS_MAGIC;
}

// `scratch_on_tmpfs`: the process level without a private tmpfs of its own, and the host's
// temp directory on a tmpfs (ScratchOnTmpfs).
LimitBound MemoryBound(const CgroupSite& site, const std::optional<GuardPlan>& guard,
                       bool scratch_on_tmpfs) {
  LimitBound b{"memory_bytes"};
  b.alternative = "RLIMIT_AS under the runtime guard with Landlock, with TMPDIR on a disk";
  if (site.memory()) {
    b.held = true;
    b.mechanism = "the run's memory cgroup, and RLIMIT_AS";
  } else if (scratch_on_tmpfs) {
    b.why_not = "TMPDIR is a tmpfs, whose pages the run's files hold outside RLIMIT_AS";
  } else if (guard && guard->landlock_abi >= 1) {
    // What holds pages outside the address space: memfds and SysV shm (seccomp), POSIX shm
    // (/dev/shm is outside the guard's Landlock paths).
    b.held = true;
    b.mechanism =
        "RLIMIT_AS, with memfd_create and SysV shm denied (seccomp) and /dev/shm closed "
        "(Landlock)";
  } else {
    b.why_not = guard ? "this kernel has no Landlock, so /dev/shm stays open"
                      : "the runtime guard is off, so memfds and /dev/shm escape RLIMIT_AS";
  }
  return b;
}

LimitBound ProcessBound(const CgroupSite& site, const std::optional<GuardPlan>& guard,
                        bool own_uids, bool sandboxed) {
  LimitBound b{"max_processes"};
  b.alternative = "a uid of the run's own (RLIMIT_NPROC) or the runtime guard's thread cap";
  if (site.pids()) {
    b.held = true;
    b.mechanism = "the run's pids cgroup";
  } else if (own_uids || sandboxed) {
    b.held = true;
    b.mechanism = sandboxed ? "RLIMIT_NPROC in the run's own user namespace"
                            : "RLIMIT_NPROC on the run's own uid";
  } else {
    // The guard's thread cap hooks `_thread.start_new_thread`, an audit event CPython 3.11 does
    // not raise: it is not counted as a bound until it is verified on an interpreter that does.
    b.why_not = guard ? "the run shares the host user's uid, and the runtime guard's thread cap "
                        "sees no thread start on this interpreter"
                      : "the runtime guard is off, and the run shares the host user's uid";
  }
  return b;
}

// A memory or process limit the caller set (IsExplicit) that nothing here bounds beyond its
// rlimit is refused; a default one degrades, with a note in the executor's environment notes.
Status RefuseUnenforceable(const CgroupSite& site, const ExecutionLimits& limits,
                           const std::vector<LimitBound>& bounds) {
  for (const LimitBound& bound : bounds) {
    const LimitSpec& spec = LimitNamed(bound.limit);
    if (bound.held || !IsExplicit(spec, limits)) continue;
    const std::string controller = spec.rlimit == RLIMIT_AS ? "memory" : "pids";
    const std::string needs = site.any()
                                  ? " needs the " + controller +
                                        " controller in the run's cgroup, which is missing here: "
                                  : " needs a cgroup, and none can be made here: ";
    return FailedPrecondition(
        "the " + std::string(bound.limit) + " limit of " + LimitText(spec, limits.*spec.member) +
        needs + site.missing + "; nor " + bound.alternative + ": " + bound.why_not +
        " (ExecutorOptions::accept_weaker_limits, --accept-weaker-limits at the CLI, applies it "
        "as " +
        RlimitName(spec.rlimit) + " alone)");
  }
  return Status::Ok();
}

// The environment note where the default limits degraded; empty where nothing did.
std::string DegradedNote(const CgroupSite& site, const LimitBound& memory,
                         const LimitBound& processes) {
  std::string note;
  if (!site.memory()) {
    note = memory.held ? "memory is bounded by " + memory.mechanism
                       : "memory is bounded by RLIMIT_AS alone (memfd and tmpfs pages escape it)";
  }
  if (!site.pids()) {
    note += note.empty() ? "the number of processes is bounded by " : ", processes by ";
    note += processes.held ? processes.mechanism : "RLIMIT_NPROC alone (not for root)";
  }
  if (!site.any()) note += ", and leftovers are found by their run token only";
  if (!note.empty()) {
    return std::string(site.any() ? "the run's cgroup lacks a controller"
                                  : "no cgroup for this run") +
           " (" + site.missing + "): " + note;
  }
  if (!site.swap_accounted) {
    return site.hierarchies.front().v2
               ? "swap is not accounted here (no memory.swap.max): the run's memory may be swapped"
               : "swap is not accounted here: the run's cgroup has memory.swappiness 0 instead";
  }
  return "";
}

// resources/runner.py of the data dir; with an explicit resource_dir that holds runner.py
// itself, that one.
StatusOr<std::string> FindRunner(const ExecutorOptions& options) {
  const std::string data_dir =
      options.resource_dir.empty() ? DefaultDataDir() : options.resource_dir;
  std::string runner = (std::filesystem::path(data_dir) / "resources" / "runner.py").string();
  if (!options.resource_dir.empty() &&
      std::filesystem::exists(std::filesystem::path(data_dir) / "runner.py")) {
    runner = (std::filesystem::path(data_dir) / "runner.py").string();
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(runner, ec))
    return NotFound("runner not found at " + runner);
  return runner;
}

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

// Children of a root host run as other uids and must read the runner and the guard's module
// (nothing in them is secret).
void OpenToRunUids(const std::string& dir) {
  ::chmod(dir.c_str(), 0755);
  std::error_code listed;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, listed)) {
    ::chmod(entry.path().c_str(), entry.is_directory() ? 0755 : 0644);
  }
}

class LocalExecutor final : public Executor {
 public:
  LocalExecutor(std::string python, std::string runner, std::optional<TempDir> bytecode_dir,
                const ExecutorOptions& options, std::optional<SandboxPlan> sandbox,
                std::optional<GuardPlan> guard, bool use_cache)
      : bytecode_dir_(std::move(bytecode_dir)),
        use_cache_(use_cache),
        python_(std::move(python)),
        runner_(std::move(runner)),
        site_packages_(options.site_packages),
        sandbox_(std::move(sandbox)),
        options_(options),
        guard_(std::move(guard)),
        cgroups_(CgroupSite::ForThisProcess()),
        memory_bound_(
            MemoryBound(*cgroups_, guard_, !sandbox_ && !private_mounts_ && ScratchOnTmpfs())),
        process_bound_(ProcessBound(*cgroups_, guard_, own_uids_, sandbox_.has_value())),
        degraded_note_(DegradedNote(*cgroups_, memory_bound_, process_bound_)),
        // The zygote's loop is in the guard's module (guard/zygote_loop.hpp), which the
        // zygote loads whether or not its children arm the guard. At the namespaces level it
        // forks each child into namespaces of its own (sandbox/zygote_child.hpp): a root host (a
        // uid per child), a cgroup per child (which the child joins itself), and the guard (its
        // module is in the sandbox only then).
        zygote_module_(guard_     ? guard_->module_path
                       : sandbox_ ? ""
                                  : GuardModulePath()),
        fork_server_(options.fork_server && options.warm_pool_size > 0 && !zygote_module_.empty() &&
                     (!sandbox_ || (own_uids_ && cgroups_->any()))) {
    // Once, not in every result (AddLevelNote logs the level's own).
    if (guard_ && guard_->landlock_abi < 1) LogWarning(kNoLandlock);
    if (!degraded_note_.empty()) LogWarning(degraded_note_);
    if (options.warm_pool_size > 0) {
      pool_ = std::make_unique<WarmPool>(
          options.warm_pool_size, std::chrono::milliseconds(options.pool_idle_timeout_ms),
          [this](const RunSnapshot& s) { return Start(s, StartMode::kWarm); },
          [this](const std::string& key) { DropZygote(key); });
    }
  }

  ~LocalExecutor() override;

  // Idle pooled children and the pool's counters, for tests and the benchmark.
  std::vector<pid_t> IdlePids(const RunSnapshot* snapshot) const {
    if (!pool_) return {};
    if (snapshot == nullptr) return pool_->IdlePids();
    const std::string key = Key(*snapshot);
    return pool_->IdlePids(&key);
  }
  WarmPoolCounters PoolCounters() const { return pool_ ? pool_->counters() : WarmPoolCounters{}; }
  std::vector<pid_t> ForkServerPids() const { return ZygotePids(); }
  RuntimeGuardStatus GuardStatus() const {
    return guard_ ? RuntimeGuardStatus{true, guard_->landlock_abi} : RuntimeGuardStatus{};
  }

  BackendKind backend() const override { return BackendKind::kLocal; }
  IsolationLevel isolation() const override {
    return sandbox_ ? IsolationLevel::kNamespaces : IsolationLevel::kProcess;
  }
  BackendTraits Traits(const RunSnapshot& snapshot) const override {
    BackendTraits t;
    t.host_paths_visible = !sandbox_;
    t.fresh_start = "every call starts a fresh interpreter.";
    // Egress is the host's (egress/), at both levels: the child itself has no network.
    t.network_targets = options_.egress.enabled;
    if (auto targets = ParseEgressTargets(snapshot.network_targets);
        t.network_targets && targets.ok() && !targets->empty()) {
      t.network = DescribeEgress(*targets);
      t.network_tools.assign(kEgressToolNames.begin(), kEgressToolNames.end());
    }
    t.validates_in_child = validate_in_child_;
    t.isolation_meaning =
        sandbox_ ? "Own namespaces: only its own files and processes."
        : guard_ ? "A confined host process: no network or new processes, writes only to its "
                   "own directories; host file metadata is visible."
                 : "A host process under its limits only.";
    return t;
  }

  // An environment note of the level (auto fell back to a weaker level, and why; a limit the
  // level does not enforce): logged once, shown by EnvironmentNotes(), not in every result.
  void AddLevelNote(std::string note) {
    if (note.empty()) return;
    LogWarning(note);
    level_notes_.push_back(std::move(note));
  }

  // What holds for every run of this executor, which results therefore do not repeat:
  // the level's notes, a guard without Landlock, limits that degrade where cgroups fall short.
  std::vector<std::string> EnvironmentNotes() const {
    std::vector<std::string> notes = level_notes_;
    if (guard_ && guard_->landlock_abi < 1) notes.emplace_back(kNoLandlock);
    if (!degraded_note_.empty()) notes.push_back(degraded_note_);
    return notes;
  }

  // The mechanism of each limit a run may set, for describe --measure and the selftest.
  std::vector<LimitMechanism> LimitMechanisms() const {
    std::vector<LimitMechanism> out;
    for (const LimitSpec& spec : LimitTable()) {
      if (spec.enforcer != LimitEnforcer::kRlimit && spec.name != "max_workdir_bytes") continue;
      const LimitBound* bound = spec.name == memory_bound_.limit    ? &memory_bound_
                                : spec.name == process_bound_.limit ? &process_bound_
                                                                    : nullptr;
      if (bound != nullptr) {
        out.push_back({std::string(spec.name), bound->held
                                                   ? bound->mechanism
                                                   : std::string(RlimitName(spec.rlimit)) +
                                                         " alone; an explicit value is refused (" +
                                                         bound->why_not + ")"});
      } else if (spec.name == "max_workdir_bytes") {
        const bool sized = sandbox_.has_value() || private_mounts_;
        out.push_back({std::string(spec.name),
                       sized ? "a private tmpfs of that size, and the host's disk watch"
                             : "the host's disk watch over the run's private directory"});
      } else {
        out.push_back({std::string(spec.name), RlimitName(spec.rlimit)});
      }
    }
    return out;
  }

  ExecutionResult Execute(const ExecutionRequest& request, const RunSnapshot& snapshot) override {
    const auto start = Clock::now();
    ExecutionResult result = Run(request, snapshot, start);
    if (pool_) pool_->RunEnded();  // the refill for the child this run took may start now
    if (std::string note = OpenFilesNote(snapshot.limits); !note.empty()) {
      result.message = result.message.empty() ? note : result.message + "; " + note;
    }
    result.backend = "local";
    result.isolation = std::string(IsolationName(isolation()));
    result.interpreter = python_;
    result.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    return result;
  }

  // Sessions (session_child.hpp): a child of their own, started cold, never pooled or forked.
  StatusOr<std::unique_ptr<ExecutorSession>> OpenSession(const RunSnapshot& snapshot,
                                                         const SessionSettings& settings) override {
    if (!sandbox_ && !own_uids_) {
      return Unavailable(
          "sessions need the namespaces level, or the process level on a root host (each child "
          "its own uid), so that nothing crosses sessions; here the process level runs every "
          "child as uid " +
          std::to_string(::getuid()) +
          ", so one session could reach another's processes and files");
    }
    std::vector<std::string> imports;
    if (auto refused = RefuseRun(ExecutionRequest{}, snapshot, imports)) {
      return FailedPrecondition(refused->message);
    }
    auto parent = SessionParent(settings);
    if (!parent.ok()) return parent.status();
    LocalSessionConfig config;
    config.snapshot = snapshot;
    config.snapshot.tools = ToolsForRun(snapshot);
    // Started on the executor's own thread: the parent-death signal follows the thread that
    // forked, and the caller's (a request's thread, say) may end long before the session.
    config.start = [this, snapshot, parent = *parent] {
      return session_starter_->Call([&] { return StartSessionChild(snapshot, parent); });
    };
    config.guard = [this, snapshot, imports](const SessionChild& c) {
      std::optional<RuntimeGuardSpec> spec;
      if (!guard_) return spec;
      spec = GuardSpecForRun(*guard_, snapshot, c.workdir->path(), sandbox_.has_value());
      spec->imports = imports;
      return spec;
    };
    config.stamp = [this, limits = snapshot.limits](ExecutionResult& r) {
      auto note = [&r](const std::string& text) {
        if (!text.empty()) r.message += (r.message.empty() ? "" : "; ") + text;
      };
      note(OpenFilesNote(limits));
      r.backend = "local";
      r.isolation = std::string(IsolationName(isolation()));
    };
    return NewLocalSession(std::move(config));
  }

  void Warm(const RunSnapshot& snapshot) override {
    if (!CheckLimits(snapshot.limits).ok() || !Unenforceable(snapshot.limits).ok()) return;
    if (pool_) {
      pool_->Warm(Key(snapshot), snapshot);
    } else {
      Prestart(snapshot);
    }
    // While the child starts; a failure (or no package to stage) is the run's to report.
    (void)StageValidator();
  }

 private:
  Status StageValidator() {
    if (!validate_in_child_) {
      return FailedPrecondition(
          "this executor's children do not validate code (ExecutorOptions::validate_in_child is "
          "off, or the per-user cache cannot hold the validator here): validate it in the host");
    }
    std::call_once(validator_once_, [this] {
      const std::string package = DefaultDataDir() + "/validator";  // Validator::Embedded's
      validator_staged_ = StageValidatorPackage(bytecode_dir_->path(), package, use_cache_);
      if (validator_staged_.ok()) OpenToRunUids(bytecode_dir_->path() + "/validator");
    });
    return validator_staged_;
  }

  std::string Key(const RunSnapshot& snapshot) const {
    return StartKey(python_, isolation(), site_packages_, snapshot);
  }

  // Network targets are served by the egress tools, or refused (never ignored) where this
  // executor's egress is off; a malformed target or a host tool named like an egress tool is
  // refused too.
  Status CheckNetworkTargets(const RunSnapshot& snapshot) const {
    if (snapshot.network_targets.empty()) return Status::Ok();
    if (!options_.egress.enabled) {
      return FailedPrecondition(
          "network targets (" + snapshot.network_targets.front() +
          (snapshot.network_targets.size() > 1 ? ", ..." : "") +
          ") need egress, which this executor has turned off (ExecutorOptions::egress.enabled): "
          "remove the targets or turn egress on");
    }
    if (auto targets = ParseEgressTargets(snapshot.network_targets); !targets.ok()) {
      return targets.status();
    }
    for (const HostTool& tool : snapshot.tools) {
      if (IsEgressToolName(tool.name)) {
        return FailedPrecondition("the host tool \"" + tool.name +
                                  "\" has the name of a built-in egress tool, which runs with "
                                  "network targets provide: rename the tool");
      }
    }
    return Status::Ok();
  }

  // The snapshot's tools, plus the egress tools when it has network targets (checked first by
  // CheckNetworkTargets).
  std::vector<HostTool> ToolsForRun(const RunSnapshot& snapshot) const {
    std::vector<HostTool> tools = snapshot.tools;
    if (snapshot.network_targets.empty() || !options_.egress.enabled) return tools;
    auto targets = ParseEgressTargets(snapshot.network_targets);
    if (!targets.ok()) return tools;
    EgressClientOptions client;
    client.targets = std::move(*targets);
    client.max_response_bytes = options_.egress.max_response_bytes;
    client.timeout_ms = options_.egress.request_timeout_ms;
    client.max_redirects = options_.egress.max_redirects;
    for (HostTool& t : MakeEgressTools(std::make_shared<const EgressClient>(std::move(client)))) {
      tools.push_back(std::move(t));
    }
    return tools;
  }

  Status Unenforceable(const ExecutionLimits& limits) const {
    return options_.accept_weaker_limits
               ? Status::Ok()
               : RefuseUnenforceable(*cgroups_, limits, {memory_bound_, process_bound_});
  }

  // A setup-error result when the run may not start (limits, mounts, the guard's imports into
  // `imports`, limits no cgroup here can enforce), a cancelled one when it was cancelled already;
  // nullopt when it may start.
  std::optional<ExecutionResult> RefuseRun(const ExecutionRequest& request,
                                           const RunSnapshot& snapshot,
                                           std::vector<std::string>& imports) {
    const ExecutionLimits& limits = snapshot.limits;
    if (Status s = CheckLimits(limits); !s.ok())
      return NotRunResult(Outcome::kSetupError, s.message());
    for (const auto& m : snapshot.mounts) {
      auto checked = ValidateMount(m);
      if (!checked.ok()) return NotRunResult(Outcome::kSetupError, checked.status().message());
      // The snapshot's kind decides how the mount is bound, captured and fenced.
      if (checked->kind != m.kind) {
        return NotRunResult(Outcome::kSetupError,
                            "mount " + m.mount_path + ": host path " + m.host_path + " is now a " +
                                std::string(MountKindName(checked->kind)) + ", not the " +
                                std::string(MountKindName(m.kind)) + " it was when added");
      }
    }
    if (Status s = CheckMountLayout(snapshot.mounts); !s.ok())
      return NotRunResult(Outcome::kSetupError, s.message());
    if (sandbox_) {
      if (Status s = CheckSandboxMounts(snapshot.mounts); !s.ok())
        return NotRunResult(Outcome::kSetupError, s.message());
    }
    if (Status s = CheckNetworkTargets(snapshot); !s.ok()) {
      return NotRunResult(Outcome::kSetupError, s.message());
    }
    if (request.validate_in_child) {
      if (Status s = StageValidator(); !s.ok())
        return NotRunResult(Outcome::kSetupError, s.message());
    }
    if (guard_ && !request.validate_in_child) {
      // The embedded validator is up by now (the provider validated the code with it); a child
      // that validates the code computes the list itself, from the same policy.
      auto validator = Validator::Embedded();
      if (!validator.ok())
        return NotRunResult(Outcome::kSetupError, "runtime guard: " + validator.status().message());
      auto allowed = (*validator)->AllowedImports(snapshot.policy);
      if (!allowed.ok())
        return NotRunResult(Outcome::kSetupError, "runtime guard: " + allowed.status().message());
      imports = std::move(*allowed);
    }
    if (Status s = Unenforceable(limits); !s.ok()) {
      return NotRunResult(Outcome::kSetupError, s.message());
    }
    if (request.cancel.cancelled()) {
      return NotRunResult(Outcome::kCancelled, CancelledMessage(request.cancel.reason()));
    }
    return std::nullopt;
  }

  ExecutionResult Run(const ExecutionRequest& request, const RunSnapshot& snapshot,
                      Clock::time_point start) {
    const ExecutionLimits& limits = snapshot.limits;
    std::vector<std::string> imports;
    if (std::optional<ExecutionResult> refused = RefuseRun(request, snapshot, imports))
      return std::move(*refused);
    StatusOr<ReadyChild> ready = TakeOrStart(snapshot);
    if (!ready.ok()) return NotRunResult(Outcome::kSetupError, ready.status().message());
    const CaptureLimits capture_limits = CaptureLimitsFor(limits);
    const MountSnapshot before = MountSnapshot::Take(snapshot.mounts, capture_limits);
    // The disk watch (run_disk_bounds.hpp) ends the run through `stop`, as the caller's cancel.
    CancellationSource stop;
    const CancellationRegistration forward =
        request.cancel.OnCancel([&] { stop.Cancel(request.cancel.reason()); });
    std::atomic<bool> watch_ended_run{false};
    auto watch =
        DiskWatch::Start(RunDiskBounds(snapshot, ready->workdir.path(), sandbox_.has_value()),
                         [&](const std::string& over) {
                           if (stop.Cancel(over)) watch_ended_run = true;
                         });
    if (!watch.ok()) {
      reaper_.Finish(std::move(*ready));
      return NotRunResult(Outcome::kSetupError, watch.status().message());
    }
    const std::unique_ptr<Child>& child = ready->child;

    const std::vector<HostTool> tools = ToolsForRun(snapshot);
    HostLoop loop({child->stdout_fd(), child->stderr_fd(), child->bridge_to_child_fd(),
                   child->bridge_from_child_fd()},
                  tools, limits);
    const auto deadline = start + std::chrono::milliseconds(limits.wall_timeout_ms);
    std::optional<RuntimeGuardSpec> guard;
    if (guard_) {
      guard = GuardSpecForRun(*guard_, snapshot, ready->workdir.path(), sandbox_.has_value());
      guard->imports = std::move(imports);
    }
    const ValidationPolicy* validate =
        request.validate_in_child ? &*request.validate_in_child : nullptr;
    LoopResult ended = loop.Run(
        request.code, deadline, ready->ready_frame_read,
        {guard ? &*guard : nullptr, /*bridge_closes_after_run=*/true, validate}, stop.token());
    const ChildEnd end = ended.end == LoopEnd::kComplete || ended.end == LoopEnd::kUserError ||
                                 ended.end == LoopEnd::kOutputLimit ||
                                 ended.end == LoopEnd::kRejected
                             ? EndAfterTerminalFrame(*ready, loop)
                             : EndWithoutTerminalFrame(*ready, loop, ended, deadline, stop.token());
    const std::string over_disk = (*watch)->Stop();  // and a last walk, the processes killed
    reaper_.Finish(
        std::move(*ready));  // the exits of the rest and the removals, off the caller's path
    // The child's verdict came before any code: the result is the provider's own rejection.
    if (ended.end == LoopEnd::kRejected)
      return RejectedResult(std::move(ended.violations), ended.message);

    ExecutionResult r =
        ResultOfRun(loop, ended, end.exit, limits, {"the interpreter"}, end.oom_killed);
    if (end.usage) {
      r.usage.cpu_ms = end.usage->cpu_ms;
      r.usage.peak_memory_bytes = end.usage->peak_memory_bytes;
    }
    if (EndsAsDiskLimit(over_disk, watch_ended_run, r)) {
      FitResult(r, limits, snapshot.mounts);
      return r;
    }
    Capture capture = CaptureChanges(before, snapshot.mounts, capture_limits);
    r.files = std::move(capture.files);
    r.omitted_files = std::move(capture.omitted);
    FitResult(r, limits, snapshot.mounts);
    return r;
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

  // A child from the warm pool when one is ready for this fingerprint, else the one Warm started
  // without a pool, else one started now.
  StatusOr<ReadyChild> TakeOrStart(const RunSnapshot& snapshot) {
    if (pool_) {
      if (auto ready = pool_->Take(Key(snapshot), snapshot)) return std::move(*ready);
    }
    if (auto prestarted = TakePrestarted(Key(snapshot))) {
      if (prestarted->ok()) return std::move(*prestarted);
    }
    return Start(snapshot);
  }

  // Without a pool: one child started now, on PrestartThread(), for the next run of this key. A
  // one-shot `codeact run` starts it while the embedded interpreter starts and validates the
  // code; a run that never comes (validation failed) leaves it to the destructor, which kills it.
  // Cold, like any child started for a run: it loads the runner and waits for its request.
  void Prestart(const RunSnapshot& snapshot) {
    std::lock_guard lock(prestart_mu_);
    if (prestarted_) return;  // one at a time; nothing refills it
    auto task = std::make_shared<std::packaged_task<StatusOr<ReadyChild>()>>(
        [this, snapshot] { return Start(snapshot, StartMode::kPrestart); });
    prestarted_.emplace(Prestarted{Key(snapshot), task->get_future()});
    PrestartThread().Post([task] { (*task)(); });
  }

  std::optional<StatusOr<ReadyChild>> TakePrestarted(const std::string& key) {
    std::future<StatusOr<ReadyChild>> child;
    {
      std::lock_guard lock(prestart_mu_);
      if (!prestarted_ || prestarted_->key != key) return std::nullopt;
      child = std::move(prestarted_->child);
      prestarted_.reset();
    }
    return child.get();
  }

  // How a child is started: for the run waiting for it; ahead of a run that is about to come
  // (Warm without a pool: a one-shot run starts its child while it validates); or for the pool.
  enum class StartMode { kForRun, kPrestart, kWarm };

  // kWarm: a pooled child loads everything before it reports ready, and is handed out only then.
  // With a fork server for the key, the child is forked from it instead (already loaded); the
  // pool's thread (kWarm) starts fork servers, a run's thread only uses one that is there.
  // kPrestart: the child arms its guard while the host validates (the run's request then finds
  // it armed) and loads nothing ahead: on 2 cores its imports slowed the validation it waited for.
  StatusOr<ReadyChild> Start(const RunSnapshot& snapshot, StartMode mode = StartMode::kForRun) {
    const bool warm = mode == StartMode::kWarm;
    std::optional<UidLease> uid;
    if (own_uids_) {
      auto lease = UidLease::Acquire({options_.run_uids.first, options_.run_uids.count});
      if (!lease.ok()) return lease.status();
      uid = std::move(*lease);
    }
    if (std::shared_ptr<ForkServer> zygote = Zygote(snapshot, /*may_start=*/warm)) {
      if (auto forked = Fork(*zygote, snapshot, uid)) return std::move(*forked);
    }
    auto group = NewCgroup(snapshot);
    if (!group.ok()) return group.status();
    auto workdir = TempDir::Create();
    if (!workdir.ok()) return workdir.status();
    if (!sandbox_) {
      if (Status s = PrepareProcessScratch(workdir->path()); !s.ok()) return s;
    }
    LaunchSpec spec =
        ChildSpec(snapshot, sandbox_ ? workdir->path() : ProcessWorkDir(workdir->path()));
    if (mode != StartMode::kForRun) spec.environment["CODEACT_WARM"] = warm ? "1" : "arm";
    std::vector<UniqueFd> trees;  // open until the child has started
    if (uid && !sandbox_) {
      if (Status s = RunAsOwnUid(snapshot, uid->uid(), workdir->path(), spec, trees); !s.ok())
        return s;
    }
    const std::vector<std::string> procs =
        *group ? (*group)->procs_files() : std::vector<std::string>{};
    if (sandbox_) {
      // The launcher joins the group first, before it enters the user namespace.
      const std::int64_t run_as = uid ? static_cast<std::int64_t>(uid->uid()) : -1;
      if (Status s = ApplySandboxPlan(*sandbox_, snapshot, workdir->path(), procs, run_as, spec);
          !s.ok())
        return s;
    } else {
      spec.cgroup_procs = procs;  // joined between fork and exec, before the uid changes
    }
    auto child = Child::Start(spec);
    if (!child.ok()) return child.status();
    ReadyChild ready(std::move(uid), std::move(*group), std::move(*workdir), std::move(*child),
                     warm);
    if (mode != StartMode::kForRun && guard_) {
      // The child arms the OS layers of its guard before it reports ready (runner.py).
      const RuntimeGuardSpec armed =
          GuardSpecForRun(*guard_, snapshot, ready.workdir.path(), sandbox_.has_value());
      if (Status s = SendGuardFrame(ready.child->bridge_to_child_fd(), armed); !s.ok()) return s;
    }
    if (warm) {
      if (Status s = WaitForReadyFrame(ready.child->bridge_from_child_fd(), kWarmStartTimeout);
          !s.ok())
        return s;
    }
    return ready;
  }

  // The parent cgroup of every session of this executor, made by the first session (its total
  // memory budget stays the first session's settings').
  StatusOr<std::shared_ptr<SessionParentGroup>> SessionParent(const SessionSettings& settings) {
    std::lock_guard lock(sessions_mu_);
    if (!session_parent_) {
      auto made = SessionParentGroup::Create(cgroups_, settings.total_memory_bytes);
      if (!made.ok()) return made.status();
      session_parent_ = std::move(*made);
      session_starter_ = std::make_unique<TaskThread>(2);
    }
    return session_parent_;
  }

  // A session's interpreter: started cold like a run's (the launcher at the namespaces level),
  // in a group of its own inside `parent`, with the runner in its session mode and RLIMIT_CPU as
  // the backstop for its whole life. It has said ready (its guard armed) when this returns.
  StatusOr<std::unique_ptr<SessionChild>> StartSessionChild(
      const RunSnapshot& snapshot, const std::shared_ptr<SessionParentGroup>& parent) {
    auto made = std::make_unique<SessionChild>();
    if (own_uids_) {
      auto lease = UidLease::Acquire({options_.run_uids.first, options_.run_uids.count});
      if (!lease.ok()) return lease.status();
      made->uid = std::move(*lease);
    }
    auto group = RunCgroup::Create(parent->child_site(),
                                   {snapshot.limits.max_processes, snapshot.limits.memory_bytes});
    if (!group.ok()) return group.status();
    made->cgroup = std::move(*group);
    auto freezer = FreezerGroup::Create(*parent->child_site(), *made->cgroup);
    if (freezer.ok()) {
      made->freezer = std::move(*freezer);
    } else {
      // No cgroup freezer: the session stops between calls by SIGSTOP of its processes.
      made->freezer_missing = freezer.status().message();
      made->freezer = FreezerGroup::ForSignals(*made->cgroup);
    }
    auto workdir = TempDir::Create("codeact-session-");
    if (!workdir.ok()) return workdir.status();
    made->workdir = std::move(*workdir);
    const std::string& scratch = made->workdir->path();
    if (!sandbox_) {
      if (Status s = PrepareProcessScratch(scratch); !s.ok()) return s;
    }
    LaunchSpec spec = ChildSpec(snapshot, sandbox_ ? scratch : ProcessWorkDir(scratch));
    spec.environment["CODEACT_SESSION"] = "1";
    std::int64_t backstop = SessionCpuBackstopSeconds(snapshot.limits);
    rlimit host{};
    if (::getrlimit(RLIMIT_CPU, &host) == 0 && host.rlim_max != RLIM_INFINITY) {
      backstop = std::min(backstop, static_cast<std::int64_t>(host.rlim_max));
    }
    spec.limits.Set(RLIMIT_CPU, backstop, backstop);
    std::vector<UniqueFd> trees;  // open until the child has started
    if (made->uid && !sandbox_) {
      if (Status s = RunAsOwnUid(snapshot, made->uid->uid(), scratch, spec, trees); !s.ok())
        return s;
    }
    std::vector<std::string> procs = made->cgroup->procs_files();
    if (made->freezer) {
      procs.insert(procs.end(), made->freezer->procs_files().begin(),
                   made->freezer->procs_files().end());
    }
    if (sandbox_) {
      const std::int64_t run_as = made->uid ? static_cast<std::int64_t>(made->uid->uid()) : -1;
      if (Status s = ApplySandboxPlan(*sandbox_, snapshot, scratch, procs, run_as, spec); !s.ok())
        return s;
    } else {
      spec.cgroup_procs = procs;
    }
    auto child = Child::Start(spec);
    if (!child.ok()) return child.status();
    made->child = std::move(*child);
    if (guard_) {
      const RuntimeGuardSpec armed =
          GuardSpecForRun(*guard_, snapshot, scratch, sandbox_.has_value());
      if (Status s = SendGuardFrame(made->child->bridge_to_child_fd(), armed); !s.ok()) return s;
    }
    if (Status s = WaitForReadyFrame(made->child->bridge_from_child_fd(), kWarmStartTimeout);
        !s.ok())
      return s;
    return made;
  }

  // The run's cgroup, or null where none can be made here (RefuseUnenforceable has decided
  // whether the run may go on without).
  StatusOr<std::unique_ptr<RunCgroup>> NewCgroup(const RunSnapshot& snapshot) {
    if (!cgroups_->any()) return std::unique_ptr<RunCgroup>();
    return RunCgroup::Create(cgroups_,
                             {snapshot.limits.max_processes, snapshot.limits.memory_bytes});
  }

  LaunchSpec ChildSpec(const RunSnapshot& snapshot, const std::string& working_dir) const {
    LaunchSpec spec;
    spec.executable = python_;
    spec.args = site_packages_ ? std::vector<std::string>{"-I", "-u", runner_}
                               : std::vector<std::string>{"-I", "-S", "-u", runner_};
    spec.environment = snapshot.environment;
    spec.environment["LANG"] = "C.UTF-8";
    spec.environment["CODEACT_BRIDGE_FDS"] =
        std::to_string(kChildBridgeReadFd) + "," + std::to_string(kChildBridgeWriteFd);
    if (guard_) spec.environment["CODEACT_GUARD"] = guard_->module_path;
    spec.metadata_channel = true;  // the guard's metadata calls (process/metadata_supervisor.hpp)
    spec.working_dir = working_dir;
    spec.limits = RlimitsFor(snapshot.limits);
    if (!own_uids_ && !sandbox_) {
      // RLIMIT_NPROC counts every task of the child's real uid, which a non-root host's child
      // shares with the host user's own processes (the namespaces level sets it inside its user
      // namespace instead): the run may add max_processes tasks to what the user has now.
      std::int64_t nproc = TasksOfRealUid(::getuid()) + snapshot.limits.max_processes;
      rlimit host{};
      if (::getrlimit(RLIMIT_NPROC, &host) == 0 && host.rlim_max != RLIM_INFINITY) {
        nproc = std::min(nproc, static_cast<std::int64_t>(host.rlim_max));
      }
      spec.limits.Set(RLIMIT_NPROC, nproc, nproc);
    }
    return spec;
  }

  // The fork server of the snapshot's start key: started when `may_start` (only ever from the
  // pool's thread, so that its parent-death signal follows a thread that lives as long as the
  // pool), replaced when it died, given up after a few failed starts.
  std::shared_ptr<ForkServer> Zygote(const RunSnapshot& snapshot, bool may_start) {
    // On a root host a forked child becomes its own uid in the zygote, but mounts need trees the
    // zygote cannot attach: such children start cold.
    if (!fork_server_ || (own_uids_ && !snapshot.mounts.empty())) return nullptr;
    const std::string key = Key(snapshot);
    std::vector<std::shared_ptr<ForkServer>> dead;  // destroyed outside the lock
    {
      std::lock_guard lock(zygotes_mu_);
      auto it = zygotes_.find(key);
      std::vector<std::shared_ptr<ForkServer>> live;
      if (it != zygotes_.end()) {
        for (auto& server : it->second.servers) {
          // A zygote is replaced after kForksPerZygote forks, from the pool's thread: its
          // children share its hash seed and memory layout, which should not last for ever.
          const bool spent = server->forks() >= kForksPerZygote;
          (server->alive() && !(spent && may_start) ? live : dead).push_back(std::move(server));
        }
        it->second.servers = live;
      }
      const bool more = may_start && live.size() < zygotes_per_key_ &&
                        (it == zygotes_.end() || it->second.failures < kMaxZygoteFailures);
      if (!more) {
        if (live.empty()) return nullptr;
        return live[it->second.next++ % live.size()];
      }
    }
    dead.clear();
    auto started = StartZygote(snapshot);
    std::lock_guard lock(zygotes_mu_);
    ZygoteEntry& z = zygotes_[key];
    if (!started.ok()) {
      ++z.failures;  // children are then started one by one, as without a fork server
      return z.servers.empty() ? nullptr : z.servers[z.next++ % z.servers.size()];
    }
    z.failures = 0;
    z.servers.push_back(*started);
    return *started;
  }

  StatusOr<std::shared_ptr<ForkServer>> StartZygote(const RunSnapshot& snapshot) {
    if (!sandbox_) {
      LaunchSpec spec = ChildSpec(snapshot, "/");
      spec.environment["CODEACT_ZYGOTE_MODULE"] = zygote_module_;
      return ForkServer::Start(std::move(spec), kWarmStartTimeout);
    }
    // Inside the sandbox, as its own uid from the run range, which its user namespace maps
    // whole (SandboxConfig::zygote_uids_first).
    struct Keep {
      UidLease uid;
      TempDir scratch;
    };
    const UidRangeSpec range{options_.run_uids.first, options_.run_uids.count};
    auto lease = UidLease::Acquire(range);
    if (!lease.ok()) return lease.status();
    auto scratch = TempDir::Create();
    if (!scratch.ok()) return scratch.status();
    auto keep = std::make_shared<Keep>(Keep{std::move(*lease), std::move(*scratch)});
    LaunchSpec spec = ChildSpec(snapshot, keep->scratch.path());
    spec.environment["CODEACT_ZYGOTE_MODULE"] = zygote_module_;
    if (Status s = ApplySandboxPlan(*sandbox_, snapshot, keep->scratch.path(), {},
                                    static_cast<std::int64_t>(keep->uid.uid()), spec, &range);
        !s.ok()) {
      return s;
    }
    return ForkServer::Start(std::move(spec), kWarmStartTimeout, /*in_sandbox=*/true,
                             std::move(keep));
  }

  // A child forked from `zygote` that has reported ready, or nullopt (the caller then starts one).
  // On a root host it becomes `uid` with its working directory a private tmpfs, as a cold child.
  // The host moves it into the run's cgroup as soon as the zygote names its pid: until the child
  // has said ready and been sent its request it runs only the runner's own setup, so nothing of
  // the run can start outside the group. `uid` is taken only when the fork succeeds.
  std::optional<ReadyChild> Fork(ForkServer& zygote, const RunSnapshot& snapshot,
                                 std::optional<UidLease>& uid) {
    auto group = NewCgroup(snapshot);
    if (!group.ok()) return std::nullopt;
    auto workdir = TempDir::Create();
    if (!workdir.ok() || !PrepareProcessScratch(workdir->path()).ok()) return std::nullopt;
    ForkIdentity identity;
    if (uid) {
      identity.uid = uid->uid();
      if (private_mounts_ || sandbox_) identity.workdir_bytes = snapshot.limits.max_workdir_bytes;
      if (!sandbox_ && !HandScratchTo(workdir->path(), uid->uid()).ok()) return std::nullopt;
    }
    if (sandbox_) {
      // The child joins its cgroup itself, from inside (ApplySandboxPlan sizes /tmp the same).
      identity.tmp_bytes = snapshot.limits.max_file_size_bytes;
      identity.cgroup_procs = (*group)->procs_files();
    }
    auto child =
        zygote.Fork(sandbox_ ? kSandboxWorkDir : ProcessWorkDir(workdir->path()), identity);
    if (!child.ok()) return std::nullopt;
    if (!sandbox_ && *group && !(*group)->Join((*child)->pid()).ok()) return std::nullopt;
    ReadyChild ready(std::nullopt, std::move(*group), std::move(*workdir), std::move(*child),
                     /*frame_read=*/true);
    // Forked children always arm ahead of their request (runner.py), like pooled ones.
    if (guard_ && !SendGuardFrame(ready.child->bridge_to_child_fd(),
                                  GuardSpecForRun(*guard_, snapshot, ready.workdir.path(),
                                                  sandbox_.has_value()))
                       .ok()) {
      return std::nullopt;
    }
    if (!WaitForReadyFrame(ready.child->bridge_from_child_fd(), kWarmStartTimeout).ok())
      return std::nullopt;
    if (sandbox_) {
      // Its pid as the host sees it (the zygote's is of the sandbox's pid namespace): the one
      // process of its cgroup, which it joined before it said ready.
      const std::vector<pid_t> pids = ready.cgroup->Pids();
      if (pids.size() != 1) return std::nullopt;
      ready.host_pid = pids.front();
    }
    ready.uid = std::move(uid);
    return ready;
  }

  // The process level on a root host: the child drops to `uid`; where this host allows a
  // private mount namespace its working directory is a tmpfs of max_workdir_bytes and the mounts
  // are idmapped trees (the run's uid acts as each mount directory's owner), else the working
  // directory is handed to `uid` and mounts must let it in by their permissions (README).
  Status RunAsOwnUid(const RunSnapshot& snapshot, uid_t uid, const std::string& workdir,
                     LaunchSpec& spec, std::vector<UniqueFd>& trees) {
    spec.run_as_uid = uid;
    if (Status s = HandScratchTo(workdir, uid); !s.ok()) return s;
    if (!private_mounts_) return Status::Ok();
    spec.private_workdir_bytes = snapshot.limits.max_workdir_bytes;
    // Attached at their host paths: a file mount inside another mount's host directory must go
    // on after (over) that directory's tree, so shorter host paths first.
    std::vector<const FileMount*> order;
    for (const auto& m : snapshot.mounts) order.push_back(&m);
    std::stable_sort(order.begin(), order.end(), [](const FileMount* a, const FileMount* b) {
      return a->host_path.size() < b->host_path.size();
    });
    for (const FileMount* mount : order) {
      const FileMount& m = *mount;
      auto tree = MountTree(m.host_path, m.mode == MountMode::kReadOnly, uid);
      if (!tree.ok()) return tree.status();
      spec.trees.emplace_back(tree->get(), m.host_path);
      trees.push_back(std::move(*tree));
    }
    return Status::Ok();
  }

  // The pool dropped a key (idle or least recently used): its fork server goes too.
  void DropZygote(const std::string& key) {
    std::vector<std::shared_ptr<ForkServer>> gone;  // destroyed after the lock
    std::lock_guard lock(zygotes_mu_);
    auto it = zygotes_.find(key);
    if (it == zygotes_.end()) return;
    gone = std::move(it->second.servers);
    zygotes_.erase(it);
  }

  std::vector<pid_t> ZygotePids() const {
    std::lock_guard lock(zygotes_mu_);
    std::vector<pid_t> pids;
    for (const auto& [key, z] : zygotes_) {
      for (const auto& server : z.servers) {
        if (server->alive()) pids.push_back(server->pid());
      }
    }
    return pids;
  }

  // The zygotes of one start key: more than one, so that forks (a page-table copy each) run in
  // parallel on more than one core.
  struct ZygoteEntry {
    std::vector<std::shared_ptr<ForkServer>> servers;
    std::size_t next = 0;  // round robin
    int failures = 0;
  };
  static constexpr int kMaxZygoteFailures = 3;
  static constexpr std::int64_t kForksPerZygote = 256;

  // The private directory of runner.pyc (or, under the guard, runner.py when compiling failed)
  // when runner_ points there; at the namespaces level also the guard's module.
  const std::optional<TempDir> bytecode_dir_;
  const bool use_cache_;  // the per-user cache for the runner's files (RunnerFilesOptions)
  // The validator package in bytecode_dir_, staged once, by the first Warm or run that needs it
  // (a one-shot's child starts meanwhile: it imports the package only when its request comes).
  std::once_flag validator_once_;
  Status validator_staged_;
  const std::string python_;
  const std::string runner_;
  const bool site_packages_;
  const std::optional<SandboxPlan> sandbox_;  // set at the namespaces level
  const ExecutorOptions options_;
  // ExecutorOptions::validate_in_child, where the per-user cache can hold the validator's
  // bytecode. Where it cannot (the process level on a non-root host, whose runs could write
  // it), the embedded interpreter compiles the runner for every executor anyway, so the host
  // validates instead of compiling the package too.
  const bool validate_in_child_ = options_.validate_in_child && use_cache_;
  // One per core, up to 4 (each holds an interpreter with everything preloaded), and no more
  // than the pool keeps ready per key.
  const std::size_t zygotes_per_key_ = std::clamp<std::size_t>(
      std::min<std::size_t>(std::thread::hardware_concurrency(),
                            static_cast<std::size_t>(std::max(options_.warm_pool_size, 1))),
      1, 4);
  const bool own_uids_ = RunsNeedOwnUids();  // a root host: each child gets its own uid
  // The process level on a root host may give each child a private mount namespace (probed by a
  // fork of the host: not at the namespaces level, which does not use it).
  const bool private_mounts_ = own_uids_ && !sandbox_ && PrivateMountNamespaceWorks();
  const std::optional<GuardPlan> guard_;             // set with ExecutorOptions::runtime_guard
  const std::shared_ptr<const CgroupSite> cgroups_;  // where each run's cgroup goes, if anywhere
  const LimitBound memory_bound_;                    // what bounds memory_bytes here
  const LimitBound process_bound_;                   // what bounds max_processes here
  const std::string degraded_note_;                  // an environment note where cgroups fall short
  const std::string zygote_module_;  // the zygote's loop (the guard's module); "": no zygote
  const bool fork_server_;
  std::vector<std::string> level_notes_;  // the level's own environment notes (AddLevelNote)
  Reaper reaper_;                         // destroyed after the pool: children are finished last
  mutable std::mutex zygotes_mu_;  // the fork servers outlive the pool's thread, which uses them
  std::map<std::string, ZygoteEntry> zygotes_;
  std::unique_ptr<WarmPool> pool_;
  std::mutex sessions_mu_;
  std::shared_ptr<SessionParentGroup> session_parent_;  // made by the first session
  std::unique_ptr<TaskThread> session_starter_;         // starts every session's child
  struct Prestarted {
    std::string key;
    std::future<StatusOr<ReadyChild>> child;
  };
  std::mutex prestart_mu_;
  // Destroyed first: a child no run took is killed (the destructor waits for its start to end).
  std::optional<Prestarted> prestarted_;
};

LocalExecutor::~LocalExecutor() {
  // A start still running on PrestartThread() uses this executor.
  std::lock_guard lock(prestart_mu_);
  if (prestarted_) prestarted_->child.wait();
}

}  // namespace

TaskThread& PrestartThread() {
  static TaskThread thread(1);
  return thread;
}

std::vector<pid_t> IdleChildPids(const Executor& executor, const RunSnapshot* snapshot) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->IdlePids(snapshot) : std::vector<pid_t>{};
}

std::vector<pid_t> ForkServerPids(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->ForkServerPids() : std::vector<pid_t>{};
}

std::vector<std::string> EnvironmentNotes(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->EnvironmentNotes() : std::vector<std::string>{};
}

std::vector<LimitMechanism> LimitMechanisms(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->LimitMechanisms() : std::vector<LimitMechanism>{};
}

RuntimeGuardStatus GuardStatus(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->GuardStatus() : RuntimeGuardStatus{};
}

WarmPoolCounters PoolCounters(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->PoolCounters() : WarmPoolCounters{};
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
  auto runner = FindRunner(options);
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
  if (*bytecode_dir) OpenToRunUids((*bytecode_dir)->path());
  auto executor = std::unique_ptr<LocalExecutor>(
      new LocalExecutor(std::move(python), std::move(*runner), std::move(*bytecode_dir), options,
                        std::move(*sandbox), std::move(guard), files.use_cache));
  executor->AddLevelNote(std::move(fallback_note));
  return std::unique_ptr<Executor>(std::move(executor));
}

}  // namespace codeact::internal
