#include "backends/hyperlight/hyperlight_executor.hpp"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "backends/hyperlight/staged_inputs.hpp"
#include "backends/run_outcome.hpp"
#include "bridge/host_loop.hpp"
#include "codeact/egress_target.hpp"
#include "codeact/validator.hpp"
#include "common/data_dir.hpp"
#include "common/status_macros.hpp"
#include "common/task_thread.hpp"
#include "files/mount_capture.hpp"
#include "limits/limit_table.hpp"
#include "os/errno_status.hpp"
#include "os/pipe_io.hpp"
#include "os/proc_tasks.hpp"
#include "os/resource_limits.hpp"
#include "process/child.hpp"
#include "process/run_cgroup.hpp"
#include "protocol/bridge_fds.hpp"
#include "protocol/protocol.hpp"
#include "protocol/worker_frames.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Time allowed to read what the worker printed after it was killed.
constexpr std::chrono::milliseconds kDrainGrace{500};
// A worker imports the SDK and checks for a hypervisor before its first frame; the wall clock
// bounds this too.
constexpr std::chrono::milliseconds kWorkerStartTimeout{10'000};
// The worker's RLIMIT_CPU at start: it lowers the soft limit before each run to what it has used
// plus the run's cpu_time_s (RLIMIT_CPU counts a process's whole life, and workers serve many
// runs).
constexpr std::int64_t kWorkerCpuSeconds = 1LL << 30;
// A worker hosts a VM: the SDK maps the guest's memory, wasmtime's code and reservations, and a
// tokio runtime's thread stacks. Its address space is the run's memory limit plus this much room
// (it bounds mappings, not memory: the guest's memory is its heap_size, see GuestMemory).
constexpr std::int64_t kVmHostingAddressSpaceBytes = 32LL << 30;
// Threads the SDK may start (tokio's workers and blocking pool), beyond max_processes and what
// the user already runs (RLIMIT_NPROC counts every task of the uid).
constexpr std::int64_t kVmHostingThreads = 512;
// The guest's compiled module (.aot, tens of MiB) is written to the cache when a sandbox is first
// built: the worker's hard RLIMIT_FSIZE; each run is held to max_file_size_bytes (the soft limit).
constexpr std::int64_t kGuestCacheFileBytes = 1LL << 30;
// A worker's memory cgroup holds its one sandbox's guest memory and that memory's snapshot
// (2 x memory_bytes at most) plus this much for the interpreter, the SDK and the guest's module.
constexpr std::int64_t kWorkerHostMemoryBytes = 512LL << 20;
// The SDK's second size (stack_size) must hold its Wasm runtime's scratch. Measured on
// hyperlight-sandbox 0.3.0 and 0.8.0, which refuse a smaller one before they try the VM ("Memory
// requested ... is less than the minimum size allowed ..."): it must exceed the heap by 64 KiB up
// to a heap of about 67 MiB, and 70066176 bytes past that, plus about 1/512 of the guest's memory
// (its page tables). The split below keeps twice that margin for page tables (probed from 16 MiB
// to 16 GiB): the smaller of half of memory_bytes plus a 1/128 and 64 KiB, and 67 MiB plus a
// 1/256 and 256 KiB. The rest is the heap.
constexpr std::int64_t kGuestScratchCapBytes = 67LL << 20;
// The worker registers its own callbacks in the sandbox under names with this prefix.
constexpr std::string_view kReservedToolPrefix = "__codeact_";
constexpr const char* kOutputMountPath = "/output";

// The rlimits of a worker, sized for hosting a VM; workers are reused only under equal limits.
// RLIMIT_NPROC is the headroom only: StartWorker adds the user's task count at the start.
ResourceLimits WorkerLimits(const ExecutionLimits& l) {
  ResourceLimits r = RlimitsFor(l);
  r.Set(RLIMIT_CPU, kWorkerCpuSeconds, kWorkerCpuSeconds + 1);
  const std::int64_t address_space = l.memory_bytes + kVmHostingAddressSpaceBytes;
  r.Set(RLIMIT_AS, address_space, address_space);
  const std::int64_t threads = l.max_processes + kVmHostingThreads;
  r.Set(RLIMIT_NPROC, threads, threads);
  const std::int64_t file_size = std::max(l.max_file_size_bytes, kGuestCacheFileBytes);
  r.Set(RLIMIT_FSIZE, file_size, file_size);
  return r;
}

// memory_bytes as the SDK's heap_size and stack_size, in its size syntax.
struct GuestMemory {
  std::string heap_size;
  std::string stack_size;
};
GuestMemory GuestMemoryFor(const ExecutionLimits& l) {
  const std::int64_t m = l.memory_bytes;
  const std::int64_t below_cap = m / 2 + m / 128 + (64LL << 10);
  const std::int64_t past_cap = kGuestScratchCapBytes + m / 256 + (256LL << 10);
  const std::int64_t stack = (std::min(below_cap, past_cap) + 1023) / 1024;
  const std::int64_t heap = m / 1024 - stack;
  return {std::to_string(heap) + "Ki", std::to_string(stack) + "Ki"};
}

std::string StartKey(const ResourceLimits& r) {
  std::string key;
  for (const Rlimit& l : r) key += std::to_string(l.resource) + "=" + std::to_string(l.soft) + "|";
  return key;
}

// One worker process. The directory and the cgroup are declared first so that they are removed
// after the child has been killed and reaped (Child's destructor does both).
struct Worker {
  TempDir dir;
  std::unique_ptr<RunCgroup> cgroup;  // null where no cgroup can be made here
  std::unique_ptr<Child> child;
  std::string output_dir;
  std::string start_key;
  std::string last_fingerprint;
};

class HyperlightExecutor final : public Executor {
 public:
  HyperlightExecutor(std::string python, std::string worker_script, HyperlightOptions options)
      : python_(std::move(python)),
        worker_script_(std::move(worker_script)),
        options_(std::move(options)),
        inputs_(options_.inputs, {options_.max_input_files, options_.max_input_bytes}) {}

  BackendKind backend() const override { return BackendKind::kHyperlight; }
  IsolationLevel isolation() const override { return IsolationLevel::kMicroVm; }
  // Sessions are not offered here (docs/sessions.md): a worker restores its sandbox's snapshot
  // between runs and serves any run of the same configuration, so a session would need a worker
  // of its own that skips the restore, which is not built.
  StatusOr<std::unique_ptr<ExecutorSession>> OpenSession(const RunSnapshot&,
                                                         const SessionSettings&) override {
    return Unavailable(
        "the hyperlight backend does not keep sessions: its workers restore the sandbox to its "
        "snapshot before every run and serve runs of any caller; use the local backend");
  }

  BackendTraits Traits(const RunSnapshot& snapshot) const override {
    BackendTraits t;
    t.network_targets = true;  // the SDK's allowed domains, reached with the guest's http_get
    if (!snapshot.network_targets.empty()) {
      t.network = "only these targets are reachable (scheme, host and port must match exactly):\n";
      for (const EgressTarget& target : snapshot.network_targets)
        t.network += "- " + target.Display() + "\n";
      // The SDK's guest offers these two only: no other method, and no request headers, can be
      // sent from it, so there is no http_request here (docs/network.md).
      t.network_tools = {"http_get", "http_post"};
      t.network +=
          "Call them with `r = await http_get(url)` or `r = await http_post(url, body=\"...\", "
          "content_type=\"application/json\")`; r is {\"status\": int, \"body\": str}; a "
          "refused or failed request raises ToolError.\n";
    }
    // The guest sees only these two directories; their host paths stay out of the text.
    if (!inputs_.empty()) t.files += InputsLine();
    t.files += "- /output (read-write, starts empty): files written here are returned (up to " +
               BytesText(snapshot.limits.max_capture_file_bytes) + " each, " +
               BytesText(snapshot.limits.max_capture_total_bytes) + " in total)\n";
    t.files += "- both are flat: use /input/NAME and /output/NAME; there are no subdirectories\n";
    t.fresh_start = "every call starts from the same clean sandbox snapshot.";
    return t;
  }

  ExecutionResult Execute(const ExecutionRequest& request, const RunSnapshot& snapshot) override {
    // The backend, the level and the duration are the provider's to stamp
    // (provider/result_stamp.hpp).
    ExecutionResult result = Run(request, snapshot, Clock::now());
    if (std::string note = OpenFilesNote(snapshot.limits); !note.empty()) {
      result.message = result.message.empty() ? note : result.message + "; " + note;
    }
    return result;
  }

 private:
  ExecutionResult TimeoutResult(const ExecutionLimits& limits, std::string stage) const {
    ExecutionResult r = NotRunResult(
        Outcome::kTimeout,
        "wall-clock limit of " + std::to_string(limits.wall_timeout_ms) + " ms exceeded " + stage);
    return r;
  }

  // A setup-error result when the run cannot start here (limits, mounts, reserved tool names,
  // the input directory), a cancelled one when it was cancelled already; nullopt when it may.
  std::optional<ExecutionResult> RefuseRun(const ExecutionRequest& request,
                                           const RunSnapshot& snapshot) const {
    if (Status s = CheckLimits(snapshot.limits); !s.ok())
      return NotRunResult(Outcome::kSetupError, s.message());
    if (request.validate_in_child) {
      return NotRunResult(Outcome::kSetupError,
                          "the hyperlight backend does not validate code in its guest: validate "
                          "it in the host (BackendTraits::validates_in_child is false)");
    }
    if (!snapshot.mounts.empty()) {
      return NotRunResult(
          Outcome::kSetupError,
          "the hyperlight backend has no mounts: give it an input directory (seen read-only "
          "at /input) and read the files the code writes under /output from the result");
    }
    for (const auto& t : snapshot.tools) {
      if (t.name.starts_with(kReservedToolPrefix)) {
        return NotRunResult(Outcome::kSetupError, "the tool name " + t.name +
                                                      " is reserved by the hyperlight backend "
                                                      "(names starting with __codeact_)");
      }
    }
    if (request.cancel.cancelled()) {
      return NotRunResult(Outcome::kCancelled, CancelledMessage(request.cancel.reason()));
    }
    return std::nullopt;
  }

  // A configured worker: an idle one when there is one (it may have died while idle: then one
  // fresh start is tried), else a new one. Null, with the run's result in `failure`, when none
  // could be had.
  std::unique_ptr<Worker> ConfiguredWorker(const RunSnapshot& snapshot, const std::string& key,
                                           const StagedInput* input, Clock::time_point deadline,
                                           ExecutionResult& failure) {
    const ExecutionLimits& limits = snapshot.limits;
    for (int attempt = 0;; ++attempt) {
      const bool fresh = attempt > 0;
      StatusOr<std::unique_ptr<Worker>> got =
          fresh ? StartWorker(limits, deadline) : TakeOrStart(snapshot, key, deadline);
      if (!got.ok()) {
        if (got.status().code() == StatusCode::kDeadlineExceeded && Clock::now() >= deadline) {
          failure = TimeoutResult(limits, "while the hyperlight worker started");
        } else {
          failure =
              NotRunResult(got.status().code() == StatusCode::kUnavailable ? Outcome::kUnavailable
                                                                           : Outcome::kSetupError,
                           got.status().message());
        }
        return nullptr;
      }
      StatusOr<WorkerReply> reply = Configure(**got, snapshot, key, input, deadline);
      if (!reply.ok()) {
        (*got)->child->KillAll();
        if (reply.status().code() == StatusCode::kDeadlineExceeded) {
          failure = TimeoutResult(limits, "while the hyperlight sandbox was built");
          return nullptr;
        }
        if (attempt == 0) continue;  // an idle worker that died; try a fresh one once
        failure = NotRunResult(Outcome::kUnavailable,
                               "the hyperlight worker failed: " + reply.status().message());
        return nullptr;
      }
      if (reply->type == protocol::Name(protocol::MessageType::kUnavailable)) {
        failure = NotRunResult(Outcome::kUnavailable, reply->message);
        return nullptr;
      }
      if (reply->type != protocol::Name(protocol::MessageType::kConfigured)) {
        failure = NotRunResult(Outcome::kUnavailable, "the hyperlight worker answered \"" +
                                                          reply->type + "\" to its configuration");
        return nullptr;
      }
      return std::move(*got);
    }
  }

  // After a run without its terminal frame: waits for the worker until the deadline (one that
  // merely closed its bridge and went on ends as a timeout), then kills it. `ended` is
  // corrected to a timeout or a cancellation where that is what ended the run.
  static ExitInfo EndWithoutTerminalFrame(Child& child, HostLoop& loop, LoopResult& ended,
                                          Clock::time_point deadline,
                                          const CancellationToken& cancel) {
    bool timed_out = ended.end == LoopEnd::kTimeout;
    bool cancelled = false;
    if (ended.end == LoopEnd::kChildClosed && !WaitForExit(child, deadline, cancel)) {
      cancelled = cancel.cancelled();
      timed_out = !cancelled;
    }
    // The SDK cannot stop a running guest: the wall clock (or a cancellation) ends the
    // worker, and with it the VM.
    child.KillAll();
    loop.DrainOutput(kDrainGrace);
    const ExitInfo exit = child.Wait();
    if (timed_out) ended.end = LoopEnd::kTimeout;
    if (cancelled) {
      ended.end = LoopEnd::kCancelled;
      ended.message = cancel.reason();
    }
    return exit;
  }

  ExecutionResult Run(const ExecutionRequest& request, const RunSnapshot& snapshot,
                      Clock::time_point start) {
    const ExecutionLimits& limits = snapshot.limits;
    if (std::optional<ExecutionResult> refused = RefuseRun(request, snapshot))
      return std::move(*refused);
    const auto deadline = start + std::chrono::milliseconds(limits.wall_timeout_ms);
    // Held until the run ends: a restaging for a later run must not remove what this one reads.
    std::shared_ptr<const StagedInput> input;
    if (!inputs_.empty()) {
      auto staged = inputs_.Current();
      if (!staged.ok()) return NotRunResult(Outcome::kSetupError, staged.status().message());
      input = std::move(*staged);
    }
    // Workers keep a sandbox per key: a new staged copy (changed inputs) gets a new sandbox.
    const std::string key =
        input ? snapshot.fingerprint + "|input:" + input->dir.path() : snapshot.fingerprint;
    ExecutionResult failure;
    std::unique_ptr<Worker> worker =
        ConfiguredWorker(snapshot, key, input.get(), deadline, failure);
    if (!worker) return failure;
    worker->last_fingerprint = key;
    const std::vector<FileMount> output_mount = {FileMount{worker->output_dir, kOutputMountPath,
                                                           MountMode::kReadWrite,
                                                           limits.max_capture_total_bytes}};
    const CaptureLimits capture_limits = CaptureLimitsFor(limits);
    const MountSnapshot before = MountSnapshot::Take(output_mount, capture_limits);

    Child& child = *worker->child;
    HostLoop loop({child.stdout_fd(), child.stderr_fd(), child.bridge_to_child_fd(),
                   child.bridge_from_child_fd()},
                  snapshot.tools, limits);
    loop.StreamOutputTo(request.on_output);
    // The worker said ready when it started: a "setup_error" frame is not its to send.
    LoopResult ended = loop.Run(request.code, deadline, /*child_ready=*/true, {}, request.cancel);
    const bool terminal_frame = ended.end == LoopEnd::kComplete || ended.end == LoopEnd::kUserError;
    ExitInfo exit;
    if (terminal_frame) {
      // The worker wrote the guest's output before its terminal frame: it is in the pipes.
      loop.DrainAvailableOutput();
    } else {
      exit = EndWithoutTerminalFrame(child, loop, ended, deadline, request.cancel);
    }

    // A worker serves many runs: its lifetime CPU says nothing about this run's budget.
    const bool oom_killed = !terminal_frame && worker->cgroup && worker->cgroup->OomKills() > 0;
    ExecutionResult r =
        ResultOfRun(loop, ended, exit, limits,
                    {"the hyperlight worker", /*cpu_counts_from_start=*/false}, oom_killed);
    if (r.outcome == Outcome::kMemoryLimit) r.message = "the guest ran out of memory";
    // The SDK raised: the worker dropped that sandbox, and the worker goes too (a sandbox whose
    // build or restore failed half-way may leave the process in a state no run should inherit).
    const bool sdk_failed = ended.end == LoopEnd::kUserError && ended.error.type == "GuestError";
    if (sdk_failed) r.message = ended.error.message;

    // Files the guest's side writes late (HyperlightOptions::output_wait_ms); a cancellation
    // ends the wait.
    const auto read_output_at = Clock::now() + std::chrono::milliseconds(options_.output_wait_ms);
    while (Clock::now() < read_output_at && !request.cancel.cancelled()) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(std::chrono::milliseconds(20), read_output_at - Clock::now()));
    }
    Capture capture = CaptureChanges(before, output_mount, capture_limits);
    r.files = std::move(capture.files);
    r.omitted_files = std::move(capture.omitted);  // fitted to the result budget by the provider
    if (terminal_frame && !sdk_failed) Release(std::move(worker));
    return r;  // a worker not released is destroyed here: killed, reaped, its directory removed
  }

  StatusOr<WorkerReply> Configure(Worker& worker, const RunSnapshot& snapshot,
                                  const std::string& key, const StagedInput* input,
                                  Clock::time_point deadline) const {
    WorkerConfig config;
    config.fingerprint = key;
    for (const auto& t : snapshot.tools) config.tools.push_back(t.name);
    config.input_dir = input ? input->dir.path() : "";
    config.output_dir = worker.output_dir;
    config.network_targets = snapshot.network_targets;
    config.environment = snapshot.environment;
    config.cpu_time_s = snapshot.limits.cpu_time_s;
    const GuestMemory memory = GuestMemoryFor(snapshot.limits);
    config.heap_size = memory.heap_size;
    config.stack_size = memory.stack_size;
    config.max_file_size_bytes = snapshot.limits.max_file_size_bytes;
    if (Status s = WriteAll(worker.child->bridge_to_child_fd(), EncodeConfigureFrame(config));
        !s.ok())
      return s;
    return ReadWorkerReply(worker.child->bridge_from_child_fd(), deadline,
                           snapshot.limits.max_frame_bytes);
  }

  // An idle worker started under the same limits (preferring one whose last run had this
  // fingerprint, so its sandbox is warm), else a new one.
  StatusOr<std::unique_ptr<Worker>> TakeOrStart(const RunSnapshot& snapshot,
                                                const std::string& sandbox_key,
                                                Clock::time_point deadline) {
    const std::string key = StartKey(WorkerLimits(snapshot.limits));
    {
      std::lock_guard lock(mu_);
      auto best = idle_.end();
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if ((*it)->start_key != key) continue;
        if (best == idle_.end() || (*it)->last_fingerprint == sandbox_key) best = it;
      }
      if (best != idle_.end()) {
        std::unique_ptr<Worker> w = std::move(*best);
        idle_.erase(best);
        return w;
      }
    }
    return StartWorker(snapshot.limits, deadline);
  }

  void Release(std::unique_ptr<Worker> worker) {
    std::unique_ptr<Worker> surplus;
    {
      std::lock_guard lock(mu_);
      idle_.push_back(std::move(worker));
      if (static_cast<int>(idle_.size()) > std::max(options_.max_idle_workers, 0)) {
        surplus = std::move(idle_.front());
        idle_.pop_front();
      }
    }
    // `surplus` is killed and reaped here, outside the lock.
  }

  StatusOr<std::unique_ptr<Worker>> StartWorker(const ExecutionLimits& limits,
                                                Clock::time_point deadline) {
    auto dir = TempDir::Create("codeact-hl-");
    if (!dir.ok()) return dir.status();
    auto worker = std::make_unique<Worker>(Worker{std::move(*dir), nullptr, nullptr, "", "", ""});
    worker->output_dir = worker->dir.path() + "/output";
    if (::mkdir(worker->output_dir.c_str(), 0700) != 0) {
      return Internal("cannot create " + worker->output_dir + ": " + ErrnoText(errno));
    }
    LaunchSpec spec;
    spec.executable = python_;
    spec.args = {"-I", "-u", worker_script_};
    spec.environment["LANG"] = "C.UTF-8";
    spec.environment["CODEACT_BRIDGE_FDS"] =
        std::to_string(kChildBridgeReadFd) + "," + std::to_string(kChildBridgeWriteFd);
    if (!options_.sdk_path.empty()) {
      spec.environment["CODEACT_HYPERLIGHT_SDK_PATH"] =
          std::filesystem::absolute(options_.sdk_path).string();
    }
    StatusOr<std::string> cache = CacheDir();
    if (!cache.ok()) return cache.status();
    // The guest package writes its .aot under $XDG_CACHE_HOME (else ~/.cache, and a worker may
    // have no home): one private directory per executor, shared by its workers (the package
    // replaces the file atomically).
    spec.environment["XDG_CACHE_HOME"] = *cache;
    spec.working_dir = worker->dir.path();
    spec.limits = WorkerLimits(limits);
    worker->start_key = StartKey(spec.limits);
    if (std::optional<Rlimit> nproc = spec.limits.Get(RLIMIT_NPROC)) {
      const std::int64_t threads = nproc->soft + TasksOfRealUid(::getuid());
      spec.limits.Set(RLIMIT_NPROC, threads, threads);
    }
    StatusOr<std::unique_ptr<Child>> child = launcher_.Call([&spec] { return Child::Start(spec); });
    if (!child.ok())
      return SetupFailed("cannot start the hyperlight worker: " + child.status().message());
    worker->child = std::move(*child);
    const auto ready_by = std::min(deadline, Clock::now() + kWorkerStartTimeout);
    StatusOr<WorkerReply> reply =
        ReadWorkerReply(worker->child->bridge_from_child_fd(), ready_by, 64 * 1024);
    if (!reply.ok()) {
      worker->child->KillAll();
      if (reply.status().code() == StatusCode::kDeadlineExceeded) {
        if (Clock::now() >= deadline) return reply.status();
        return Unavailable("the hyperlight worker did not report ready within " +
                           std::to_string(kWorkerStartTimeout.count()) + " ms");
      }
      return Unavailable("the hyperlight worker failed to start: " + reply.status().message());
    }
    if (reply->type == protocol::Name(protocol::MessageType::kUnavailable)) {
      worker->child->KillAll();
      return Unavailable(reply->message);
    }
    if (reply->type != protocol::Name(protocol::MessageType::kReady)) {
      worker->child->KillAll();
      return Unavailable("the hyperlight worker's first frame is \"" + reply->type +
                         "\", not \"ready\"");
    }
    if (Status s = JoinWorkerCgroup(*worker, limits); !s.ok()) {
      worker->child->KillAll();
      return s;
    }
    return worker;
  }

  static Status SetupFailed(std::string message) { return FailedPrecondition(std::move(message)); }

  // The memory cgroup of memory_bytes's decision (the guest's heap bounds the code, the group the
  // whole worker, in which the VM's memory is mapped), where one can be made here. The worker
  // joins once it is ready, before any sandbox is built: a host without the SDK or a hypervisor
  // answers `unavailable` without the cost of a group (or of finding where groups go).
  Status JoinWorkerCgroup(Worker& worker, const ExecutionLimits& limits) {
    std::shared_ptr<const CgroupSite> site;
    {
      std::lock_guard lock(mu_);
      if (cgroups_ == nullptr) cgroups_ = CgroupSite::ForThisProcess();
      site = cgroups_;
    }
    if (!site->any() || !site->memory()) return Status::Ok();
    StatusOr<std::unique_ptr<RunCgroup>> group =
        RunCgroup::Create(site, {limits.max_processes + kVmHostingThreads,
                                 2 * limits.memory_bytes + kWorkerHostMemoryBytes});
    if (!group.ok())
      return SetupFailed("cannot make the hyperlight worker's cgroup: " + group.status().message());
    if (Status s = (*group)->Join(worker.child->pid()); !s.ok())
      return SetupFailed("cannot move the hyperlight worker into its cgroup: " + s.message());
    worker.cgroup = std::move(*group);
    return Status::Ok();
  }

  StatusOr<std::string> CacheDir() {
    std::lock_guard lock(mu_);
    if (!options_.cache_dir.empty()) return std::filesystem::absolute(options_.cache_dir).string();
    if (!cache_dir_) {
      auto dir = TempDir::Create("codeact-hl-cache-");
      if (!dir.ok()) return dir.status();
      cache_dir_.emplace(std::move(*dir));
    }
    return cache_dir_->path();
  }

  // The description's line for /input: its files as they are listed now (no staging), at most
  // kListedInputNames of them by name; their host paths stay out of the text.
  std::string InputsLine() const {
    auto files = ListInputs(inputs_.inputs(), {options_.max_input_files, options_.max_input_bytes});
    if (!files.ok()) {  // the reason names host paths: the run's setup_error gives it
      return "- /input (read-only): input files from the host (they cannot be staged as they are: "
             "runs end as setup_error)\n";
    }
    std::string line =
        "- /input (read-only): " + std::to_string(files->size()) + " input file(s) from the host";
    for (std::size_t i = 0; i < files->size() && i < kListedInputNames; ++i) {
      line += (i == 0 ? ": " : ", ") + (*files)[i].name;
    }
    if (files->size() > kListedInputNames) line += ", ...";
    return line + "\n";
  }
  static constexpr std::size_t kListedInputNames = 20;

  const std::string python_;
  const std::string worker_script_;
  const HyperlightOptions options_;
  InputStager inputs_;
  // Workers are started on this thread, which lives as long as the executor: the parent-death
  // signal follows the thread that forked, and a worker outlives the run (and the caller's
  // thread) that started it.
  // The workers' cache directory unless options_.cache_dir names one; removed after the workers.
  std::optional<TempDir> cache_dir_;
  // Where the workers' cgroups go, found at the first start (creating the executor probes
  // nothing); under mu_.
  std::shared_ptr<const CgroupSite> cgroups_;
  TaskThread launcher_;  // destroyed after the idle workers below
  std::mutex mu_;
  std::deque<std::unique_ptr<Worker>> idle_;
};

}  // namespace

StatusOr<std::unique_ptr<Executor>> CreateHyperlightExecutor(const ExecutorOptions& options) {
  if (options.isolation != IsolationLevel::kMicroVm && options.isolation != IsolationLevel::kAuto) {
    return InvalidArgument("the hyperlight backend has one isolation level, microvm");
  }
  std::string python = options.python_path;
  if (python.empty()) {
    auto validator = Validator::Embedded();
    if (!validator.ok()) return validator.status();
    python = (*validator)->InstallationInterpreter();
  }
  CODEACT_ASSIGN_OR_RETURN(
      const std::string script,
      ResourceFile(options.resource_dir, "hyperlight_worker.py", "hyperlight worker"));
  if (options.hyperlight.max_idle_workers < 0 || options.hyperlight.max_idle_workers > 64) {
    return InvalidArgument("max_idle_workers must be between 0 and 64");
  }
  const HyperlightOptions& h = options.hyperlight;
  if (h.output_wait_ms < 0 || h.output_wait_ms > HyperlightOptions::kMaxOutputWaitMs) {
    return InvalidArgument("output_wait_ms must be between 0 and " +
                           std::to_string(HyperlightOptions::kMaxOutputWaitMs));
  }
  if (h.max_input_files < 1 || h.max_input_bytes < 1) {
    return InvalidArgument("max_input_files and max_input_bytes must be positive");
  }
  return std::unique_ptr<Executor>(
      new HyperlightExecutor(std::move(python), std::move(script), options.hyperlight));
}

}  // namespace codeact::internal
