#include "backends/local/child_starter.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "backends/local/local_executor.hpp"
#include "backends/local/process_level_identity.hpp"
#include "backends/local/run_disk_bounds.hpp"
#include "backends/local/runner_files.hpp"
#include "backends/local/sandbox_plan.hpp"
#include "bridge/host_loop.hpp"
#include "common/data_dir.hpp"
#include "common/status_macros.hpp"
#include "limits/limit_table.hpp"
#include "os/errno_status.hpp"
#include "os/proc_tasks.hpp"
#include "os/unique_fd.hpp"
#include "process/child.hpp"
#include "process/uid_lease.hpp"
#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {
namespace {

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

// Children of a root host run as other uids and must read the runner and the guard's module
// (nothing in them is secret).
void OpenToRunUids(const std::string& dir) {
  ::chmod(dir.c_str(), 0755);
  std::error_code listed;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, listed)) {
    ::chmod(entry.path().c_str(), entry.is_directory() ? 0755 : 0644);
  }
}

// A session's cgroup inside `parent`, and its freezer (the cgroup's, or SIGSTOP of its processes
// where there is no cgroup freezer).
Status MakeSessionGroups(const RunSnapshot& snapshot, const SessionParentGroup& parent,
                         SessionChild& made) {
  CODEACT_ASSIGN_OR_RETURN(made.cgroup,
                           RunCgroup::Create(parent.child_site(), {snapshot.limits.max_processes,
                                                                   snapshot.limits.memory_bytes}));
  auto freezer = FreezerGroup::Create(*parent.child_site(), *made.cgroup);
  if (freezer.ok()) {
    made.freezer = std::move(*freezer);
  } else {
    // No cgroup freezer: the session stops between calls by SIGSTOP of its processes.
    made.freezer_missing = freezer.status().message();
    made.freezer = FreezerGroup::ForSignals(*made.cgroup);
  }
  return Status::Ok();
}

}  // namespace

ChildStarter::ChildStarter(const LocalSetup& setup, const ExecutorOptions& options,
                           std::optional<TempDir> bytecode_dir, bool use_cache)
    : setup_(setup),
      run_uids_(options.run_uids),
      bytecode_dir_(std::move(bytecode_dir)),
      use_cache_(use_cache),
      zygotes_per_key_(std::clamp<std::size_t>(
          std::min<std::size_t>(std::thread::hardware_concurrency(),
                                static_cast<std::size_t>(std::max(options.warm_pool_size, 1))),
          1, 4)),
      // The zygote's loop is in the guard's module (guard/zygote_loop.hpp), which the zygote
      // loads whether or not its children arm the guard. At the namespaces level it forks each
      // child into namespaces of its own (sandbox/zygote_child.hpp): a root host (a uid per
      // child), a cgroup per child (which the child joins itself), and the guard (its module is
      // in the sandbox only then).
      zygote_module_(setup.guard     ? setup.guard->module_path
                     : setup.sandbox ? ""
                                     : GuardModulePath()),
      fork_server_(options.fork_server && options.warm_pool_size > 0 && !zygote_module_.empty() &&
                   (!setup.sandbox || (setup.own_uids && setup.cgroups->any()))) {
  if (bytecode_dir_) OpenToRunUids(bytecode_dir_->path());
  if (options.warm_pool_size > 0) {
    pool_ = std::make_unique<WarmPool>(
        options.warm_pool_size, std::chrono::milliseconds(options.pool_idle_timeout_ms),
        [this](const std::string& key, const RunSnapshot& s) {
          return Start(key, s, StartMode::kWarm);
        },
        [this](const std::string& key) { DropKey(key); });
  }
}

ChildStarter::~ChildStarter() {
  // A start still running on PrestartThread() uses this starter.
  std::lock_guard lock(prestart_mu_);
  if (prestarted_) prestarted_->child.wait();
}

std::string ChildStarter::Key(const RunSnapshot& snapshot) const {
  return StartKey(setup_.python, setup_.isolation(), setup_.site_packages, snapshot);
}

std::vector<pid_t> ChildStarter::IdlePids(const RunSnapshot* snapshot) const {
  if (!pool_) return {};
  if (snapshot == nullptr) return pool_->IdlePids();
  const std::string key = Key(*snapshot);
  return pool_->IdlePids(&key);
}

WarmPoolCounters ChildStarter::PoolCounters() const {
  return pool_ ? pool_->counters() : WarmPoolCounters{};
}

void ChildStarter::TellRefills() {
  if (pool_) pool_->TellRefills();
}

void ChildStarter::RunEnded() {
  if (pool_) pool_->RunEnded();
}

Status ChildStarter::StageValidator() {
  if (!setup_.validate_in_child) {
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

StatusOr<ReadyChild> ChildStarter::TakeOrStart(const RunSnapshot& snapshot,
                                               const std::vector<std::string>* guard_imports) {
  const std::string key = Key(snapshot);
  if (guard_imports) NoteGuardImports(key, *guard_imports);
  if (pool_) {
    if (auto ready = pool_->Take(key, snapshot)) return std::move(*ready);
  }
  if (auto prestarted = TakePrestarted(key)) {
    if (prestarted->ok()) return std::move(*prestarted);
  }
  return Start(key, snapshot);
}

void ChildStarter::Warm(const RunSnapshot& snapshot) {
  if (pool_) {
    pool_->Warm(Key(snapshot), snapshot);
  } else {
    Prestart(snapshot);
  }
}

// Without a pool: one child started now, on PrestartThread(), for the next run of this key. A
// one-shot `codeact run` starts it while the embedded interpreter starts and validates the
// code; a run that never comes (validation failed) leaves it to the destructor, which kills it.
// Cold, like any child started for a run: it loads the runner and waits for its request.
void ChildStarter::Prestart(const RunSnapshot& snapshot) {
  std::lock_guard lock(prestart_mu_);
  if (prestarted_) return;  // one at a time; nothing refills it
  std::string key = Key(snapshot);
  auto task = std::make_shared<std::packaged_task<StatusOr<ReadyChild>()>>(
      [this, key, snapshot] { return Start(key, snapshot, StartMode::kPrestart); });
  prestarted_.emplace(Prestarted{std::move(key), task->get_future()});
  PrestartThread().Post([task] { (*task)(); });
}

std::optional<StatusOr<ReadyChild>> ChildStarter::TakePrestarted(const std::string& key) {
  std::future<StatusOr<ReadyChild>> child;
  {
    std::lock_guard lock(prestart_mu_);
    if (!prestarted_ || prestarted_->key != key) return std::nullopt;
    child = std::move(prestarted_->child);
    prestarted_.reset();
  }
  return child.get();
}

// kWarm: a pooled child loads everything before it reports ready, and is handed out only then.
// With a fork server for the key, the child is forked from it instead (already loaded); the
// pool's thread (kWarm) starts fork servers, a run's thread only uses one that is there.
// kPrestart: the child arms its guard while the host validates (the run's request then finds
// it armed) and loads nothing ahead: on 2 cores its imports slowed the validation it waited for.
StatusOr<ReadyChild> ChildStarter::Start(const std::string& key, const RunSnapshot& snapshot,
                                         StartMode mode) {
  const bool warm = mode == StartMode::kWarm;
  std::optional<UidLease> uid;
  if (setup_.own_uids) {
    CODEACT_ASSIGN_OR_RETURN(uid, UidLease::Acquire({run_uids_.first, run_uids_.count}));
  }
  if (std::shared_ptr<ForkServer> zygote = Zygote(key, snapshot, /*may_start=*/warm)) {
    if (auto forked = Fork(*zygote, key, snapshot, uid)) return std::move(*forked);
  }
  CODEACT_ASSIGN_OR_RETURN(std::unique_ptr<RunCgroup> group, NewCgroup(snapshot));
  CODEACT_ASSIGN_OR_RETURN(TempDir workdir, TempDir::Create());
  if (!setup_.sandbox) CODEACT_RETURN_IF_ERROR(PrepareProcessScratch(workdir.path()));
  LaunchSpec spec =
      ChildSpec(snapshot, setup_.sandbox ? workdir.path() : ProcessWorkDir(workdir.path()));
  if (mode != StartMode::kForRun) spec.environment["CODEACT_WARM"] = warm ? "1" : "arm";
  std::vector<UniqueFd> trees;  // open until the child has started
  if (uid && !setup_.sandbox) {
    CODEACT_RETURN_IF_ERROR(RunAsOwnUid(snapshot, uid->uid(), workdir.path(), spec, trees));
  }
  const std::vector<std::string> join = group ? group->join_files() : std::vector<std::string>{};
  CODEACT_RETURN_IF_ERROR(
      ApplyLevelAndGroups(snapshot, workdir.path(), join, uid ? &*uid : nullptr, spec));
  CODEACT_ASSIGN_OR_RETURN(std::unique_ptr<Child> child, Child::Start(spec));
  ReadyChild ready(std::move(uid), std::move(group), std::move(workdir), std::move(child), warm);
  // The child arms the OS layers of its guard before it reports ready (runner.py).
  if (mode != StartMode::kForRun && setup_.guard)
    CODEACT_RETURN_IF_ERROR(SendGuardAhead(ready, key, snapshot));
  if (warm) {
    CODEACT_RETURN_IF_ERROR(
        WaitForReadyFrame(ready.child->bridge_from_child_fd(), kWarmStartTimeout));
  }
  return ready;
}

// The child joins `join` (its cgroups' join files) and gets its level: at the namespaces level the
// launcher joins the groups first, before it enters the user namespace; at the process level the
// child joins them between fork and exec, before the uid changes.
Status ChildStarter::ApplyLevelAndGroups(const RunSnapshot& snapshot, const std::string& scratch,
                                         const std::vector<std::string>& join, const UidLease* uid,
                                         LaunchSpec& spec) const {
  if (!setup_.sandbox) {
    spec.cgroup_join = join;
    return Status::Ok();
  }
  const std::int64_t run_as = uid ? static_cast<std::int64_t>(uid->uid()) : -1;
  return ApplySandboxPlan(*setup_.sandbox, snapshot, scratch, join, run_as, spec);
}

StatusOr<std::shared_ptr<SessionParentGroup>> ChildStarter::SessionParent(
    const SessionSettings& settings) {
  std::lock_guard lock(sessions_mu_);
  if (!session_parent_) {
    CODEACT_ASSIGN_OR_RETURN(
        session_parent_, SessionParentGroup::Create(setup_.cgroups, settings.total_memory_bytes));
    session_starter_ = std::make_unique<TaskThread>(2);
  }
  return session_parent_;
}

StatusOr<std::unique_ptr<SessionChild>> ChildStarter::StartSession(
    const RunSnapshot& snapshot, const std::shared_ptr<SessionParentGroup>& parent) {
  return session_starter_->Call([&] { return StartSessionChild(snapshot, parent); });
}

// A session's interpreter: started cold like a run's (the launcher at the namespaces level), in
// a group of its own inside `parent`, with the runner in its session mode and RLIMIT_CPU as the
// backstop for its whole life.
StatusOr<std::unique_ptr<SessionChild>> ChildStarter::StartSessionChild(
    const RunSnapshot& snapshot, const std::shared_ptr<SessionParentGroup>& parent) {
  auto made = std::make_unique<SessionChild>();
  if (setup_.own_uids) {
    CODEACT_ASSIGN_OR_RETURN(made->uid, UidLease::Acquire({run_uids_.first, run_uids_.count}));
  }
  CODEACT_RETURN_IF_ERROR(MakeSessionGroups(snapshot, *parent, *made));
  CODEACT_ASSIGN_OR_RETURN(made->workdir, TempDir::Create("codeact-session-"));
  const std::string& scratch = made->workdir->path();
  if (!setup_.sandbox) CODEACT_RETURN_IF_ERROR(PrepareProcessScratch(scratch));
  LaunchSpec spec = ChildSpec(snapshot, setup_.sandbox ? scratch : ProcessWorkDir(scratch));
  spec.environment["CODEACT_SESSION"] = "1";
  std::int64_t backstop = SessionCpuBackstopSeconds(snapshot.limits);
  rlimit host{};
  if (::getrlimit(RLIMIT_CPU, &host) == 0 && host.rlim_max != RLIM_INFINITY) {
    backstop = std::min(backstop, static_cast<std::int64_t>(host.rlim_max));
  }
  spec.limits.Set(RLIMIT_CPU, backstop, backstop);
  std::vector<UniqueFd> trees;  // open until the child has started
  if (made->uid && !setup_.sandbox) {
    CODEACT_RETURN_IF_ERROR(RunAsOwnUid(snapshot, made->uid->uid(), scratch, spec, trees));
  }
  std::vector<std::string> join = made->cgroup->join_files();
  if (made->freezer) {
    join.insert(join.end(), made->freezer->join_files().begin(), made->freezer->join_files().end());
  }
  CODEACT_RETURN_IF_ERROR(
      ApplyLevelAndGroups(snapshot, scratch, join, made->uid ? &*made->uid : nullptr, spec));
  CODEACT_ASSIGN_OR_RETURN(made->child, Child::Start(spec));
  if (setup_.guard) {
    const RuntimeGuardSpec armed =
        GuardSpecForRun(*setup_.guard, snapshot, scratch, setup_.sandbox.has_value());
    CODEACT_RETURN_IF_ERROR(
        SendGuardFrame(made->child->bridge_to_child_fd(), armed, /*with_imports=*/false));
  }
  CODEACT_RETURN_IF_ERROR(
      WaitForReadyFrame(made->child->bridge_from_child_fd(), kWarmStartTimeout));
  return made;
}

// The run's cgroup, or null where none can be made here (the admission has decided whether the
// run may go on without).
StatusOr<std::unique_ptr<RunCgroup>> ChildStarter::NewCgroup(const RunSnapshot& snapshot) {
  if (!setup_.cgroups->any()) return std::unique_ptr<RunCgroup>();
  return RunCgroup::Create(setup_.cgroups,
                           {snapshot.limits.max_processes, snapshot.limits.memory_bytes});
}

LaunchSpec ChildStarter::ChildSpec(const RunSnapshot& snapshot,
                                   const std::string& working_dir) const {
  LaunchSpec spec;
  spec.executable = setup_.python;
  spec.args = setup_.site_packages ? std::vector<std::string>{"-I", "-u", setup_.runner}
                                   : std::vector<std::string>{"-I", "-S", "-u", setup_.runner};
  spec.environment = snapshot.environment;
  spec.environment["LANG"] = "C.UTF-8";
  spec.environment["CODEACT_BRIDGE_FDS"] =
      std::to_string(kChildBridgeReadFd) + "," + std::to_string(kChildBridgeWriteFd);
  if (setup_.guard) spec.environment["CODEACT_GUARD"] = setup_.guard->module_path;
  spec.metadata_channel = true;  // the guard's metadata calls (process/metadata_supervisor.hpp)
  spec.working_dir = working_dir;
  spec.limits = RlimitsFor(snapshot.limits);
  if (setup_.scratch_in_memory) {
    const std::int64_t as = snapshot.limits.memory_bytes - ScratchShareOfMemory(snapshot.limits);
    spec.limits.Set(RLIMIT_AS, as, as);
  }
  if (!setup_.own_uids && !setup_.sandbox) {
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

// The process level on a root host: the child drops to `uid`; where this host allows a
// private mount namespace its working directory is a tmpfs of max_workdir_bytes and the mounts
// are idmapped trees (the run's uid acts as each mount directory's owner), else the working
// directory is handed to `uid` and mounts must let it in by their permissions
// (docs/threat-model.md).
Status ChildStarter::RunAsOwnUid(const RunSnapshot& snapshot, uid_t uid, const std::string& workdir,
                                 LaunchSpec& spec, std::vector<UniqueFd>& trees) const {
  spec.run_as_uid = uid;
  CODEACT_RETURN_IF_ERROR(HandScratchTo(workdir, uid));
  if (!setup_.private_mounts) return Status::Ok();
  spec.private_workdir_bytes = snapshot.limits.max_workdir_bytes;
  // Attached at their host paths: a file mount inside another mount's host directory must go
  // on after (over) that directory's tree, so shorter host paths first.
  std::vector<const FileMount*> order;
  for (const auto& m : snapshot.mounts) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(), [](const FileMount* a, const FileMount* b) {
    return a->host_path.size() < b->host_path.size();
  });
  for (const FileMount* m : order) {
    CODEACT_ASSIGN_OR_RETURN(UniqueFd tree,
                             MountTree(m->host_path, m->mode == MountMode::kReadOnly, uid));
    spec.trees.emplace_back(tree.get(), m->host_path);
    trees.push_back(std::move(tree));
  }
  return Status::Ok();
}

// The fork server of the snapshot's start key: started when `may_start` (only ever from the
// pool's thread, so that its parent-death signal follows a thread that lives as long as the
// pool), replaced when it died, given up after a few failed starts.
std::shared_ptr<ForkServer> ChildStarter::Zygote(const std::string& key,
                                                 const RunSnapshot& snapshot, bool may_start) {
  // On a root host a forked child becomes its own uid in the zygote, but mounts need trees the
  // zygote cannot attach: such children start cold.
  if (!fork_server_ || (setup_.own_uids && !snapshot.mounts.empty())) return nullptr;
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

StatusOr<std::shared_ptr<ForkServer>> ChildStarter::StartZygote(const RunSnapshot& snapshot) {
  if (!setup_.sandbox) {
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
  const UidRangeSpec range{run_uids_.first, run_uids_.count};
  CODEACT_ASSIGN_OR_RETURN(UidLease lease, UidLease::Acquire(range));
  CODEACT_ASSIGN_OR_RETURN(TempDir scratch, TempDir::Create());
  auto keep = std::make_shared<Keep>(Keep{std::move(lease), std::move(scratch)});
  LaunchSpec spec = ChildSpec(snapshot, keep->scratch.path());
  spec.environment["CODEACT_ZYGOTE_MODULE"] = zygote_module_;
  CODEACT_RETURN_IF_ERROR(ApplySandboxPlan(*setup_.sandbox, snapshot, keep->scratch.path(), {},
                                           static_cast<std::int64_t>(keep->uid.uid()), spec,
                                           &range));
  return ForkServer::Start(std::move(spec), kWarmStartTimeout, /*in_sandbox=*/true,
                           std::move(keep));
}

// A child forked from `zygote` that has reported ready, or nullopt (the caller then starts one).
// On a root host it becomes `uid` with its working directory a private tmpfs, as a cold child.
// It joins the run's cgroup first after the fork, before anything of the runner runs, through
// files the host opens and passes. `uid` is taken only when the fork succeeds.
std::optional<ReadyChild> ChildStarter::Fork(ForkServer& zygote, const std::string& key,
                                             const RunSnapshot& snapshot,
                                             std::optional<UidLease>& uid) {
  const bool sandboxed = setup_.sandbox.has_value();
  auto group = NewCgroup(snapshot);
  if (!group.ok()) return std::nullopt;
  // At the namespaces level the child's /tmp and /work are tmpfs mounts of its own sandbox,
  // made in the zygote's fork: it has no directory on the host's disk (nothing uses one).
  TempDir workdir;
  if (!sandboxed) {
    auto made = TempDir::Create();
    if (!made.ok() || !PrepareProcessScratch(made->path()).ok()) return std::nullopt;
    workdir = std::move(*made);
  }
  ForkIdentity identity;
  if (uid) {
    identity.uid = uid->uid();
    if (setup_.private_mounts || sandboxed) {
      identity.workdir_bytes = snapshot.limits.max_workdir_bytes;
    }
    if (!sandboxed && !HandScratchTo(workdir.path(), uid->uid()).ok()) return std::nullopt;
  }
  // ApplySandboxPlan sizes /tmp the same.
  if (sandboxed) identity.tmp_bytes = snapshot.limits.max_file_size_bytes;
  // The child joins its cgroup itself, before its request (fork_server.hpp).
  if (*group) identity.cgroup_join = (*group)->join_files();
  auto child = zygote.Fork(sandboxed ? kSandboxWorkDir : ProcessWorkDir(workdir.path()), identity);
  if (!child.ok()) return std::nullopt;
  ReadyChild ready(std::nullopt, std::move(*group), std::move(workdir), std::move(*child),
                   /*frame_read=*/true);
  // Forked children always arm ahead of their request (runner.py), like pooled ones.
  if (setup_.guard && !SendGuardAhead(ready, key, snapshot).ok()) return std::nullopt;
  if (!WaitForReadyFrame(ready.child->bridge_from_child_fd(), kWarmStartTimeout).ok())
    return std::nullopt;
  if (sandboxed) {
    // Its pid as the host sees it (the zygote's is of the sandbox's pid namespace): the one
    // process of its cgroup, which it joined before it said ready.
    const std::vector<pid_t> pids = ready.cgroup->Pids();
    if (pids.size() != 1) return std::nullopt;
    ready.host_pid = pids.front();
  }
  ready.uid = std::move(uid);
  return ready;
}

void ChildStarter::NoteGuardImports(const std::string& key,
                                    const std::vector<std::string>& imports) {
  std::lock_guard lock(imports_mu_);
  auto it = guard_imports_.find(key);
  if (it != guard_imports_.end() && *it->second == imports) return;
  if (it == guard_imports_.end() && guard_imports_.size() >= kMaxNotedImports)
    guard_imports_.clear();  // keys of a pool at its bound, or starts without a pool
  guard_imports_[key] = std::make_shared<const std::vector<std::string>>(imports);
}

Status ChildStarter::SendGuardAhead(ReadyChild& ready, const std::string& key,
                                    const RunSnapshot& snapshot) {
  RuntimeGuardSpec spec =
      GuardSpecForRun(*setup_.guard, snapshot, ready.workdir.path(), setup_.sandbox.has_value());
  std::shared_ptr<const std::vector<std::string>> imports;
  {
    std::lock_guard lock(imports_mu_);
    if (auto it = guard_imports_.find(key); it != guard_imports_.end()) imports = it->second;
  }
  if (imports) spec.imports = *imports;
  CODEACT_RETURN_IF_ERROR(
      SendGuardFrame(ready.child->bridge_to_child_fd(), spec, imports != nullptr));
  if (imports) ready.guard_ahead = std::move(spec);
  return Status::Ok();
}

// The pool dropped a key (idle or least recently used): its fork server goes too, and the
// imports noted for it.
void ChildStarter::DropKey(const std::string& key) {
  {
    std::lock_guard lock(imports_mu_);
    guard_imports_.erase(key);
  }
  std::vector<std::shared_ptr<ForkServer>> gone;  // destroyed after the lock
  std::lock_guard lock(zygotes_mu_);
  auto it = zygotes_.find(key);
  if (it == zygotes_.end()) return;
  gone = std::move(it->second.servers);
  zygotes_.erase(it);
}

std::vector<pid_t> ChildStarter::ZygotePids() const {
  std::lock_guard lock(zygotes_mu_);
  std::vector<pid_t> pids;
  for (const auto& [key, z] : zygotes_) {
    for (const auto& server : z.servers) {
      if (server->alive()) pids.push_back(server->pid());
    }
  }
  return pids;
}

}  // namespace codeact::internal
