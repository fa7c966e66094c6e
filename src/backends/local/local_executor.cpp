#include "backends/local/local_executor.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "backends/local/reaper.hpp"
#include "backends/local/sandbox_plan.hpp"
#include "backends/local/warm_pool.hpp"
#include "backends/run_outcome.hpp"
#include "bridge/host_loop.hpp"
#include "codeact/validator.hpp"
#include "common/data_dir.hpp"
#include "files/mount_capture.hpp"
#include "process/child.hpp"
#include "process/fork_server.hpp"
#include "validation/bytecode.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Time allowed to read what the child printed after its processes are dead.
constexpr std::chrono::milliseconds kDrainGrace{500};
// How long a pooled child may take to load everything and report ready.
constexpr std::chrono::milliseconds kWarmStartTimeout{10'000};

ResourceLimits ToResourceLimits(const ExecutionLimits& l) {
  return {l.cpu_time_s, l.memory_bytes, l.max_file_size_bytes, std::min(l.max_open_files, HostOpenFilesCeiling()),
          l.max_processes};
}

// Everything that shapes a started child, so equal keys may share warm children: the
// interpreter, the isolation level, whether `site` loads, the environment, the rlimits and the
// mounts. This is the part of the config fingerprint (provider.hpp) a child depends on; tool
// names and the other limits travel in the request and are enforced by the host.
std::string StartKey(const std::string& python, IsolationLevel isolation, bool site_packages, const RunSnapshot& s) {
  auto field = [](std::string_view v) { return std::to_string(v.size()) + ":" + std::string(v); };
  std::string key = field(python) + field(IsolationName(isolation)) + (site_packages ? "site" : "nosite");
  for (const auto& [k, v] : s.environment) key += "|env" + field(k) + field(v);
  const ResourceLimits r = ToResourceLimits(s.limits);
  for (std::int64_t v : {r.cpu_time_s, r.memory_bytes, r.max_file_size_bytes, r.max_open_files, r.max_processes}) {
    key += "|" + std::to_string(v);
  }
  for (const auto& m : s.mounts) {
    key += "|mount" + field(m.host_path) + field(m.mount_path) + field(MountModeName(m.mode));
  }
  return key;
}

class LocalExecutor final : public Executor {
 public:
  LocalExecutor(std::string python, std::string runner, std::optional<TempDir> bytecode_dir,
                const ExecutorOptions& options, std::optional<SandboxPlan> sandbox)
      : bytecode_dir_(std::move(bytecode_dir)),
        python_(std::move(python)),
        runner_(std::move(runner)),
        site_packages_(options.site_packages),
        sandbox_(std::move(sandbox)),
        // Forked children share the zygote's namespaces, so only the process level forks.
        fork_server_(options.fork_server && options.warm_pool_size > 0 && !sandbox_) {
    if (options.warm_pool_size > 0) {
      pool_ = std::make_unique<WarmPool>(
          options.warm_pool_size, std::chrono::milliseconds(options.pool_idle_timeout_ms),
          [this](const RunSnapshot& s) { return Start(s, /*warm=*/true); },
          [this](const std::string& key) { DropZygote(key); });
    }
  }

  // Idle pooled children and the pool's counters, for tests and the benchmark.
  std::vector<pid_t> IdlePids(const RunSnapshot* snapshot) const {
    if (!pool_) return {};
    if (snapshot == nullptr) return pool_->IdlePids();
    const std::string key = Key(*snapshot);
    return pool_->IdlePids(&key);
  }
  WarmPoolCounters PoolCounters() const { return pool_ ? pool_->counters() : WarmPoolCounters{}; }
  std::vector<pid_t> ForkServerPids() const { return ZygotePids(); }

  BackendKind backend() const override { return BackendKind::kLocal; }
  IsolationLevel isolation() const override {
    return sandbox_ ? IsolationLevel::kNamespaces : IsolationLevel::kProcess;
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
    result.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    return result;
  }

  void Warm(const RunSnapshot& snapshot) override {
    if (!pool_ || !CheckLimits(snapshot.limits).ok()) return;
    pool_->Warm(Key(snapshot), snapshot);
  }

 private:
  std::string Key(const RunSnapshot& snapshot) const {
    return StartKey(python_, isolation(), site_packages_, snapshot);
  }

  ExecutionResult Run(const ExecutionRequest& request, const RunSnapshot& snapshot, Clock::time_point start) {
    const ExecutionLimits& limits = snapshot.limits;
    if (Status s = CheckLimits(limits); !s.ok()) return NotRunResult(Outcome::kSetupError, s.message());
    for (const auto& m : snapshot.mounts) {
      if (auto checked = ValidateMount(m); !checked.ok()) {
        return NotRunResult(Outcome::kSetupError, checked.status().message());
      }
    }
    if (sandbox_) {
      if (Status s = CheckSandboxMounts(snapshot.mounts); !s.ok()) return NotRunResult(Outcome::kSetupError, s.message());
    }
    if (request.cancel.cancelled()) {
      return NotRunResult(Outcome::kCancelled, CancelledMessage(request.cancel.reason()));
    }
    StatusOr<ReadyChild> ready = TakeOrStart(snapshot);
    if (!ready.ok()) return NotRunResult(Outcome::kSetupError, ready.status().message());
    const MountSnapshot before = MountSnapshot::Take(snapshot.mounts);
    std::unique_ptr<Child>& child = ready->child;

    HostLoop loop({child->stdout_fd(), child->stderr_fd(), child->bridge_to_child_fd(), child->bridge_from_child_fd()},
                  snapshot.tools, limits);
    const auto deadline = start + std::chrono::milliseconds(limits.wall_timeout_ms);
    LoopResult ended = loop.Run(request.code, deadline, ready->ready_frame_read, request.cancel);
    ExitInfo exit;
    if (ended.end == LoopEnd::kComplete || ended.end == LoopEnd::kUserError || ended.end == LoopEnd::kOutputLimit) {
      // The runner flushed stdout and stderr before its terminal frame, so all the output is in
      // the pipes already. Kill the group now; the sweep, the reaping and the directory removal
      // happen off the caller's path.
      child->KillGroup();
      loop.DrainAvailableOutput();
      reaper_.Finish(std::move(*ready));
    } else {
      // The bridge closed without a terminal frame: usually the child is dying. Give it until the
      // deadline, so that one which merely closed its bridge and went on ends as a timeout.
      bool timed_out = ended.end == LoopEnd::kTimeout;
      bool cancelled = false;
      if (ended.end == LoopEnd::kChildClosed && !WaitForExit(*child, deadline, request.cancel)) {
        cancelled = request.cancel.cancelled();
        timed_out = !cancelled;
      }
      // Timeout, cancellation, crash or protocol error: everything, now, and the exit status
      // classifies it.
      child->KillAll();
      loop.DrainOutput(kDrainGrace);
      exit = child->Wait();
      if (timed_out) ended.end = LoopEnd::kTimeout;
      if (cancelled) {
        ended.end = LoopEnd::kCancelled;
        ended.message = request.cancel.reason();
      }
    }

    ExecutionResult r = ResultOfRun(loop, ended, exit, limits, {"the interpreter"});

    Capture capture = CaptureChanges(before, snapshot.mounts,
                                     {limits.max_capture_file_bytes, limits.max_capture_total_bytes});
    r.files = std::move(capture.files);
    r.omitted_files = std::move(capture.omitted);
    return r;
  }

  // A child from the warm pool when one is ready for this fingerprint, else one started now.
  StatusOr<ReadyChild> TakeOrStart(const RunSnapshot& snapshot) {
    if (pool_) {
      if (auto ready = pool_->Take(Key(snapshot), snapshot)) return std::move(*ready);
    }
    return Start(snapshot);
  }

  // `warm`: a pooled child loads everything before it reports ready, and is handed out only then.
  // With a fork server for the key, the child is forked from it instead (already loaded); the
  // pool's thread (`warm`) starts fork servers, a run's thread only uses one that is there.
  StatusOr<ReadyChild> Start(const RunSnapshot& snapshot, bool warm = false) {
    if (std::shared_ptr<ForkServer> zygote = Zygote(snapshot, /*may_start=*/warm)) {
      if (auto forked = Fork(*zygote)) return std::move(*forked);
    }
    auto workdir = TempDir::Create();
    if (!workdir.ok()) return workdir.status();
    LaunchSpec spec = ChildSpec(snapshot, workdir->path());
    if (warm) spec.environment["CODEACT_WARM"] = "1";
    std::optional<PidsCgroup> cgroup;
    if (sandbox_) {
      if (sandbox_->pids_cgroup) {
        auto created = PidsCgroup::Create(snapshot.limits.max_processes);
        if (!created.ok()) return created.status();
        cgroup = std::move(*created);
      }
      Status s = ApplySandboxPlan(*sandbox_, snapshot, workdir->path(), cgroup ? cgroup->procs_file() : "", spec);
      if (!s.ok()) return s;
    }
    auto child = Child::Start(spec);
    if (!child.ok()) return child.status();
    if (warm) {
      if (Status s = WaitForReadyFrame((*child)->bridge_from_child_fd(), kWarmStartTimeout); !s.ok()) return s;
    }
    return ReadyChild{std::move(cgroup), std::move(*workdir), std::move(*child), warm};
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
    spec.working_dir = working_dir;
    spec.limits = ToResourceLimits(snapshot.limits);
    return spec;
  }

  // The fork server of the snapshot's start key: started when `may_start` (only ever from the
  // pool's thread, so that its parent-death signal follows a thread that lives as long as the
  // pool), replaced when it died, given up after a few failed starts.
  std::shared_ptr<ForkServer> Zygote(const RunSnapshot& snapshot, bool may_start) {
    if (!fork_server_) return nullptr;
    const std::string key = Key(snapshot);
    std::shared_ptr<ForkServer> dead;  // destroyed outside the lock
    {
      std::lock_guard lock(zygotes_mu_);
      auto it = zygotes_.find(key);
      if (it != zygotes_.end() && it->second.server) {
        if (it->second.server->alive()) return it->second.server;
        dead = std::move(it->second.server);
      }
      if (!may_start || (it != zygotes_.end() && it->second.failures >= kMaxZygoteFailures)) return nullptr;
    }
    dead.reset();
    auto started = ForkServer::Start(ChildSpec(snapshot, "/"), kWarmStartTimeout);
    std::lock_guard lock(zygotes_mu_);
    ZygoteEntry& z = zygotes_[key];
    if (!started.ok()) {
      ++z.failures;  // children are then started one by one, as without a fork server
      return nullptr;
    }
    z.failures = 0;
    z.server = std::move(*started);
    return z.server;
  }

  // A child forked from `zygote` that has reported ready, or nullopt (the caller then starts one).
  std::optional<ReadyChild> Fork(ForkServer& zygote) {
    auto workdir = TempDir::Create();
    if (!workdir.ok()) return std::nullopt;
    auto child = zygote.Fork(workdir->path());
    if (!child.ok()) return std::nullopt;
    if (!WaitForReadyFrame((*child)->bridge_from_child_fd(), kWarmStartTimeout).ok()) return std::nullopt;
    return ReadyChild{std::nullopt, std::move(*workdir), std::move(*child), /*ready_frame_read=*/true};
  }

  // The pool dropped a key (idle or least recently used): its fork server goes too.
  void DropZygote(const std::string& key) {
    std::shared_ptr<ForkServer> gone;
    std::lock_guard lock(zygotes_mu_);
    auto it = zygotes_.find(key);
    if (it == zygotes_.end()) return;
    gone = std::move(it->second.server);
    zygotes_.erase(it);
  }

  std::vector<pid_t> ZygotePids() const {
    std::lock_guard lock(zygotes_mu_);
    std::vector<pid_t> pids;
    for (const auto& [key, z] : zygotes_) {
      if (z.server && z.server->alive()) pids.push_back(z.server->pid());
    }
    return pids;
  }

  struct ZygoteEntry {
    std::shared_ptr<ForkServer> server;
    int failures = 0;
  };
  static constexpr int kMaxZygoteFailures = 3;

  const std::optional<TempDir> bytecode_dir_;  // holds runner.pyc when runner_ points there
  const std::string python_;
  const std::string runner_;
  const bool site_packages_;
  const std::optional<SandboxPlan> sandbox_;  // set at the namespaces level
  const bool fork_server_;
  Reaper reaper_;                    // destroyed after the pool: children are finished last
  mutable std::mutex zygotes_mu_;    // the fork servers outlive the pool's thread, which uses them
  std::map<std::string, ZygoteEntry> zygotes_;
  std::unique_ptr<WarmPool> pool_;
};

}  // namespace

std::vector<pid_t> IdleChildPids(const Executor& executor, const RunSnapshot* snapshot) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->IdlePids(snapshot) : std::vector<pid_t>{};
}

std::vector<pid_t> ForkServerPids(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->ForkServerPids() : std::vector<pid_t>{};
}

WarmPoolCounters PoolCounters(const Executor& executor) {
  const auto* local = dynamic_cast<const LocalExecutor*>(&executor);
  return local ? local->PoolCounters() : WarmPoolCounters{};
}

StatusOr<std::unique_ptr<Executor>> CreateLocalExecutor(const ExecutorOptions& options) {
  auto validator = Validator::Embedded();
  if (!validator.ok()) return validator.status();
  std::string python = options.python_path.empty() ? (*validator)->InstallationInterpreter() : options.python_path;
  if (Status s = CheckInterpreterMatches(**validator, python); !s.ok()) return s;
  const std::string data_dir = options.resource_dir.empty() ? DefaultDataDir() : options.resource_dir;
  std::string runner = (std::filesystem::path(data_dir) / "resources" / "runner.py").string();
  if (!options.resource_dir.empty() && std::filesystem::exists(std::filesystem::path(data_dir) / "runner.py")) {
    runner = (std::filesystem::path(data_dir) / "runner.py").string();
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(runner, ec)) return NotFound("runner not found at " + runner);
  if (options.warm_pool_size < 0 || options.warm_pool_size > 64) {
    return InvalidArgument("warm_pool_size must be between 0 and 64");
  }
  if (options.pool_idle_timeout_ms <= 0) return InvalidArgument("pool_idle_timeout_ms must be positive");
  if (options.isolation == IsolationLevel::kMicroVm) {
    return InvalidArgument("the local backend runs at the process or namespaces level, not microvm");
  }
  // Children start from the runner compiled once, here, rather than compiling their script on
  // every start (~8 ms of a ~33 ms cold start on the 2-core test VM). At the namespaces level the
  // sandbox shows the private directory holding runner.pyc at kSandboxResourceDir. If compiling
  // fails the children run the source, as they always could.
  std::optional<TempDir> bytecode_dir;
  if (auto pyc = CompileToPyc(runner); pyc.ok()) {
    if (auto dir = TempDir::Create("codeact-runner-"); dir.ok()) {
      const std::string path = dir->path() + "/runner.pyc";
      std::ofstream out(path, std::ios::binary);
      out.write(pyc->data(), static_cast<std::streamsize>(pyc->size()));
      if (out.good()) {
        out.close();
        runner = path;
        bytecode_dir = std::move(*dir);
      }
    }
  }
  // kAuto: the namespaces level where this kernel allows it, else the process level. An explicit
  // level runs as asked or not at all.
  std::optional<SandboxPlan> sandbox;
  if (options.isolation != IsolationLevel::kProcess) {
    Status ready = [&]() -> Status {
      auto plan = PlanSandbox(python, std::filesystem::path(runner).parent_path().string());
      if (!plan.ok()) return plan.status();
      if (Status s = ProbeSandbox(*plan, python); !s.ok()) return s;
      sandbox = std::move(*plan);
      return Status::Ok();
    }();
    if (!ready.ok() && options.isolation == IsolationLevel::kNamespaces) {
      return Unavailable("the namespaces isolation level is not available here: " + ready.message());
    }
  }
  return std::unique_ptr<Executor>(new LocalExecutor(std::move(python), std::move(runner), std::move(bytecode_dir),
                                                    options, std::move(sandbox)));
}

}  // namespace codeact::internal
