// Executor: runs code that has passed approval and validation, under a frozen RunSnapshot,
// and returns one ExecutionResult. What happens to the child is data, never an exception.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/egress_target.hpp"
#include "codeact/execution.hpp"
#include "codeact/file_mount.hpp"
#include "codeact/limits.hpp"
#include "codeact/policy.hpp"
#include "codeact/session.hpp"
#include "codeact/status.hpp"
#include "codeact/tool.hpp"

namespace codeact {

enum class BackendKind { kLocal, kHyperlight };
// kProcess: rlimits, a process group, a scrubbed environment; not a security boundary alone.
// kNamespaces: the same runner in new user/pid/mount/net/ipc/uts namespaces with a read-only
// root view, no network and a seccomp filter (docs/threat-model.md).
// kMicroVm: the hyperlight backend's only level (a Hyperlight micro-VM).
// kAuto: the local backend picks kNamespaces where this kernel allows it, else kProcess; the
// hyperlight backend runs kMicroVm. Results say which level ran.
enum class IsolationLevel { kProcess, kNamespaces, kMicroVm, kAuto };

std::string_view BackendName(BackendKind kind);
std::string_view IsolationName(IsolationLevel level);

// Everything a run depends on, frozen when it begins. Later registry changes affect later runs.
struct RunSnapshot {
  // Sorted by name. A tool still marked requires_approval in the snapshot a run executes under was
  // not approved for that run: the bridge refuses its calls (ToolError "ApprovalRequired").
  std::vector<HostTool> tools;
  std::vector<FileMount> mounts;  // validated, sorted by mount path
  // Where the backend has egress (BackendTraits), parsed when added; sorted by text.
  std::vector<EgressTarget> network_targets;
  std::map<std::string, std::string> environment;  // the child's whole environment
  ExecutionLimits limits;
  ValidationPolicy policy;
  std::string fingerprint;  // see provider.hpp; keys warm children and sandbox reuse
  // Who the run is for, where one host serves many callers ("" for one: the default). Warm
  // children and fork servers serve one tenant only (docs/warm-pool.md): a forked child shares
  // its zygote's hash seed and memory layout, which one tenant must not learn of another's.
  std::string tenant;
};

// Options of the hyperlight backend (hyperlight_provider.hpp); ignored by the local backend.
struct HyperlightOptions {
  // What the code sees read-only at /input, which is flat (/input/NAME only): each entry is a
  // host directory (its regular files) or a single file, all staged side by side into a private
  // copy that the SDK maps. Staging refuses symlinks, subdirectories, special files and a name
  // given twice (runs end as setup_error, naming the path); a change of the inputs' contents is
  // staged again before the next run, which gets a sandbox built on it. Empty: no /input.
  std::vector<std::string> inputs;
  // Bounds on what is staged (a run over them is setup_error): files, and their total bytes.
  std::int64_t max_input_files = 4096;
  std::int64_t max_input_bytes = 256LL << 20;
  // How long the host waits after a run before it reads /output, for files the guest's side
  // writes late (0, the default: it reads at once; at most kMaxOutputWaitMs). Every run waits
  // the whole time: the host cannot know whether a file is still to come.
  std::int64_t output_wait_ms = 0;
  static constexpr std::int64_t kMaxOutputWaitMs = 10'000;
  // A directory put first on the worker's sys.path before `hyperlight_sandbox` is imported.
  // Empty (the default) imports the installed SDK. The tests point it at their fake SDK
  // (tests/fakes); nothing picks that fake up unless it is named here.
  std::string sdk_path;
  // Idle workers kept between runs (each holds warm sandboxes); more are started under load.
  int max_idle_workers = 2;
  // The workers' XDG_CACHE_HOME, where the guest package writes its compiled module (tens of
  // MiB). Empty: a private directory per executor, removed with it.
  std::string cache_dir;
};

// The host uids runs take on a root host (local backend): every child gets one of its own for
// its life, never root. Pick a block no other user or container range on the host uses; the
// default lies above systemd's container ranges. A non-root host runs children as itself.
struct RunUidRange {
  std::uint32_t first = 0x70000000;  // 1879048192
  std::uint32_t count = 65536;
};

// Egress at the local backend (docs/network.md): a snapshot's network targets are
// reached by the host, never by the child (which keeps no network at the namespaces level),
// through the built-in tools http_get, http_post and http_request, present in runs that have
// targets. Each request goes only to a listed target and method, to an address checked once
// per hop (loopback, private and link-local ones only where that address is itself listed),
// with TLS verified against the system's CA store.
struct EgressOptions {
  // Off: this executor has no egress, and a snapshot with network targets is refused
  // (setup_error) rather than run without them.
  bool enabled = true;
  // One response's body; a larger one fails the call (ToolError "HttpError"), never truncated.
  // The run's max_frame_bytes bounds it too, since the result travels in one frame.
  std::int64_t max_response_bytes = 1 << 20;
  // One call, redirects included, from the name lookup to the last byte.
  std::int64_t request_timeout_ms = 30'000;
  // Redirects followed per call, each to a listed target and re-checked.
  int max_redirects = 5;
};

struct ExecutorOptions {
  BackendKind backend = BackendKind::kLocal;
  // An explicit level runs as asked or CreateExecutor fails with the reason (UNAVAILABLE).
  IsolationLevel isolation = IsolationLevel::kAuto;
  // Child interpreter. Empty: the python3 of the installation the embedded validator links.
  std::string python_path;
  // Directory holding runner.py (and hyperlight_worker.py). Empty: found next to the binary.
  std::string resource_dir;
  // Warm pool (local backend): interpreters started ahead of time, with the runner loaded and
  // waiting for their one request, per start key (everything that shapes a child: environment,
  // rlimits, mounts, isolation level, interpreter). A child serves one run and is never reused.
  // A run that finds no ready child starts one itself rather than wait. 0 turns the pool off
  // (one-shot callers such as `codeact run` do that); at most 64.
  int warm_pool_size = 2;
  // A start key unused for this long has its ready children stopped: an idle host keeps none.
  std::int64_t pool_idle_timeout_ms = 300'000;
  // With the pool, at the process level: one pre-imported interpreter per start key forks the
  // pooled children (and the children of runs that find none ready), so a child costs a fork
  // instead of an interpreter start. Off: every pooled child is an interpreter of its own.
  bool fork_server = true;
  // The runtime guard (local backend, both levels; docs/threat-model.md): each run child arms a
  // seccomp filter, Landlock where the kernel has it, an audit hook and a guarded __import__
  // before any user code. Off only when asked (the benchmark compares both); a child that cannot
  // arm it ends the run as setup_error instead of running unguarded. Where the kernel has no
  // Landlock the rest still arms, and each result's `message` says so. The hyperlight backend's
  // guest makes no system calls to guard; it ignores this.
  bool runtime_guard = true;
  // Let the child import installed third-party packages (site-packages). Off by default: the
  // default policy allows only the standard library, and skipping `site` saves ~5 ms a start.
  bool site_packages = false;
  // Where no cgroup can be made for runs (a non-root host without a delegated subtree:
  // docs/cgroups.md), an explicit memory_bytes or max_processes limit is refused (setup_error).
  // True accepts them as rlimits alone (RLIMIT_AS, RLIMIT_NPROC); every result's `message` then
  // names the bounds that do not apply. Defaults degrade that way in any case, and say so.
  bool accept_weaker_limits = false;
  // Local backend: each stateless run's child validates its code itself, before any of it runs,
  // with the validator package staged in the runner's private directory (the data directory's,
  // which Validator::Embedded() loads by default), under the request's policy (a rejection is
  // validation_failed, nothing run), and computes its guard's import list from that policy. A
  // process that runs once (`codeact run`) then never starts the embedded interpreter, ~50 ms of
  // CPU. The provider validates in the host when this is off, where the per-user cache cannot
  // hold the package, and always for sessions (BackendTraits::validates_in_child).
  bool validate_in_child = false;
  RunUidRange run_uids;
  HyperlightOptions hyperlight;
  EgressOptions egress;  // local backend
};

// What a backend tells the provider, and through it the model, about its runs
// (CodeActProvider::ToolDescription): no part of the description branches on the backend.
struct BackendTraits {
  // Mounts appear at their host paths (no mount namespace): the model is told those paths.
  bool host_paths_visible = false;
  // The snapshot's network targets can be reached. A backend without egress refuses a snapshot
  // that names any (setup_error) rather than ignore them.
  bool network_targets = false;
  // Lines the backend adds under "Files:" (each ending in '\n'), beside the snapshot's mounts.
  std::string files;
  // How each call starts, for the model: the sentence after "State does not persist between
  // calls: ".
  std::string fresh_start;
  // What follows "Network: " when the snapshot has targets (the targets and how the code reaches
  // them, ending in '\n'); empty: the description lists the targets as given. Last, so that
  // positional initialisers of the fields above stay valid.
  std::string network;
  // The functions through which the code reaches the snapshot's targets (`http_get`, ...);
  // the provider hands them to the validator (ValidationPolicy::network_tools), whose hint for
  // a rejected network module then names them instead of saying there is no network.
  std::vector<std::string> network_tools;
  // The backend validates a stateless run's code in its child when the request asks
  // (ExecutionRequest::validate_in_child); the provider then does not.
  bool validates_in_child = false;
  // The backend takes the provider's validation of a stateless run while its child compiles the
  // code (ExecutionRequest::host_verdict); the provider then does not validate first.
  bool overlaps_validation = false;
  // What the isolation level means for the code, in one sentence for the model (ending in '.');
  // empty: the description names the level only.
  std::string isolation_meaning;
};

// The backend's side of a Session (session.hpp): one child serving the runs of one session.
class ExecutorSession {
 public:
  virtual ~ExecutorSession() = default;  // as Close
  // One run in the session's interpreter, started first where there is none; the result's
  // `session_state` says which (kNew, kKept, kRestarted). A run that ends otherwise than ok or
  // error ends the interpreter. Runs take turns. The caller has approved and validated the code.
  virtual ExecutionResult Execute(const ExecutionRequest& request) = 0;
  virtual Status Pause() = 0;
  virtual Status Resume() = 0;
  virtual bool paused() const = 0;
  virtual void Close() = 0;  // kills and removes everything; idempotent
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Thread-safe; many runs may execute at once, each in its own child.
  virtual ExecutionResult Execute(const ExecutionRequest& request, const RunSnapshot& snapshot) = 0;
  // Prepares for runs under `snapshot` ahead of time (starts warm children) without waiting for
  // it; a no-op where there is nothing to prepare. Runs never depend on it having been called.
  // The local backend without a pool (warm_pool_size 0) starts one child for the next run of
  // `snapshot`, which that run takes (a one-shot `codeact run` starts it while it validates);
  // nothing refills it, and the executor kills it if no run took it.
  virtual void Warm(const RunSnapshot& snapshot) { (void)snapshot; }
  virtual BackendKind backend() const = 0;
  virtual IsolationLevel isolation() const = 0;  // the level that runs: never kAuto
  virtual BackendTraits Traits(const RunSnapshot& snapshot) const = 0;
  // A session under `snapshot`, fixed for its life; `settings` are the provider's (the first
  // session fixes the total memory budget). UNAVAILABLE, with the reason, where the backend or
  // this host cannot keep sessions apart; the interpreter starts on the first run.
  virtual StatusOr<std::unique_ptr<ExecutorSession>> OpenSession(const RunSnapshot& snapshot,
                                                                 const SessionSettings& settings) {
    (void)snapshot;
    (void)settings;
    return Unavailable("this backend does not keep sessions");
  }
};

StatusOr<std::unique_ptr<Executor>> CreateExecutor(const ExecutorOptions& options);

}  // namespace codeact
