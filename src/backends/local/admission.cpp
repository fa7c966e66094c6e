#include "backends/local/admission.hpp"

#include <sys/resource.h>

#include <memory>

#include "backends/run_outcome.hpp"
#include "codeact/validator.hpp"
#include "common/log.hpp"
#include "common/status_macros.hpp"
#include "egress/egress_tools.hpp"
#include "egress/http_client.hpp"
#include "limits/limit_table.hpp"
#include "process/child.hpp"

namespace codeact::internal {
namespace {

constexpr const char* kNoLandlock =
    "runtime guard armed without Landlock (this kernel has none): its seccomp filter and audit "
    "hook hold; at the "
    "process level files and /proc are not fenced";

// `scratch_in_memory`: the process level without a memory cgroup or a private tmpfs of its own,
// and the host's temp directory on a tmpfs: the run's files there are memory, so memory_bytes is
// split between RLIMIT_AS and the disk watch's bound on them (ScratchShareOfMemory).
LimitBound MemoryBound(const CgroupSite& site, const std::optional<GuardPlan>& guard,
                       bool scratch_in_memory) {
  LimitBound b{"memory_bytes"};
  b.alternative = "RLIMIT_AS under the runtime guard with Landlock";
  if (site.memory()) {
    b.held = true;
    b.mechanism = "the run's memory cgroup, and RLIMIT_AS";
  } else if (guard && guard->landlock_abi >= 1) {
    // What holds pages outside the address space: memfds and SysV shm (seccomp), POSIX shm
    // (/dev/shm is outside the guard's Landlock paths), and files on a tmpfs TMPDIR (counted).
    b.held = true;
    b.mechanism =
        "RLIMIT_AS, with memfd_create and SysV shm denied (seccomp) and /dev/shm closed "
        "(Landlock)";
    if (scratch_in_memory) {
      b.mechanism +=
          "; TMPDIR is a tmpfs, so RLIMIT_AS gets three quarters of it and the disk watch holds "
          "the run's files there to the rest";
    }
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

// Each mount as it is now, of the kind it was when added (the snapshot's kind decides how it is
// bound, captured and fenced), laid out without conflicts, and bindable in the sandbox.
Status CheckMounts(const std::vector<FileMount>& mounts, bool sandboxed) {
  for (const auto& m : mounts) {
    CODEACT_ASSIGN_OR_RETURN(const FileMount checked, ValidateMount(m));
    if (checked.kind != m.kind) {
      return FailedPrecondition("mount " + m.mount_path + ": host path " + m.host_path +
                                " is now a " + std::string(MountKindName(checked.kind)) +
                                ", not the " + std::string(MountKindName(m.kind)) +
                                " it was when added");
    }
  }
  CODEACT_RETURN_IF_ERROR(CheckMountLayout(mounts));
  if (sandboxed) CODEACT_RETURN_IF_ERROR(CheckSandboxMounts(mounts));
  return Status::Ok();
}

// The imports the runtime guard lets a run make: the embedded validator's reading of `policy`.
// The validator is up by now (the provider validated the code with it); a child that validates
// the code computes the list itself, from the same policy.
StatusOr<std::vector<std::string>> GuardImports(const ValidationPolicy& policy) {
  auto validator = Validator::Embedded();
  if (!validator.ok()) return FailedPrecondition("runtime guard: " + validator.status().message());
  auto allowed = (*validator)->AllowedImports(policy);
  if (!allowed.ok()) return FailedPrecondition("runtime guard: " + allowed.status().message());
  return std::move(*allowed);
}

}  // namespace

Admission::Admission(const LocalSetup& setup, const ExecutorOptions& options)
    : setup_(setup),
      egress_(options.egress),
      accept_weaker_limits_(options.accept_weaker_limits),
      memory_bound_(MemoryBound(*setup.cgroups, setup.guard, setup.scratch_in_memory)),
      process_bound_(
          ProcessBound(*setup.cgroups, setup.guard, setup.own_uids, setup.sandbox.has_value())),
      degraded_note_(DegradedNote(*setup.cgroups, memory_bound_, process_bound_)) {
  // Once, not in every result (AddLevelNote logs the level's own).
  if (setup_.guard && setup_.guard->landlock_abi < 1) LogWarning(kNoLandlock);
  if (!degraded_note_.empty()) LogWarning(degraded_note_);
}

std::optional<ExecutionResult> Admission::RefuseRun(
    const ExecutionRequest& request, const RunSnapshot& snapshot,
    const std::function<Status()>& stage_validator,
    std::optional<std::vector<std::string>>& imports) const {
  // The checks in order: the first that fails is the run's setup error.
  const Status admitted = [&]() -> Status {
    CODEACT_RETURN_IF_ERROR(CheckLimits(snapshot.limits));
    CODEACT_RETURN_IF_ERROR(CheckMounts(snapshot.mounts, setup_.sandbox.has_value()));
    CODEACT_RETURN_IF_ERROR(CheckNetworkTargets(snapshot));
    if (request.validate_in_child) CODEACT_RETURN_IF_ERROR(stage_validator());
    if (setup_.guard && !request.validate_in_child) {
      CODEACT_ASSIGN_OR_RETURN(imports, GuardImports(snapshot.policy));
    }
    return Unenforceable(snapshot.limits);
  }();
  if (!admitted.ok()) return NotRunResult(Outcome::kSetupError, admitted.message());
  if (request.cancel.cancelled()) {
    return NotRunResult(Outcome::kCancelled, CancelledMessage(request.cancel.reason()));
  }
  return std::nullopt;
}

Status Admission::Unenforceable(const ExecutionLimits& limits) const {
  return accept_weaker_limits_
             ? Status::Ok()
             : RefuseUnenforceable(*setup_.cgroups, limits, {memory_bound_, process_bound_});
}

// Network targets (parsed when they were added) are served by the egress tools, or refused
// (never ignored) where this executor's egress is off; a host tool named like an egress tool is
// refused too.
Status Admission::CheckNetworkTargets(const RunSnapshot& snapshot) const {
  if (snapshot.network_targets.empty()) return Status::Ok();
  if (!egress_.enabled) {
    return FailedPrecondition(
        "network targets (" + snapshot.network_targets.front().text +
        (snapshot.network_targets.size() > 1 ? ", ..." : "") +
        ") need egress, which this executor has turned off (ExecutorOptions::egress.enabled): "
        "remove the targets or turn egress on");
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

std::vector<HostTool> Admission::ToolsForRun(const RunSnapshot& snapshot) const {
  std::vector<HostTool> tools = snapshot.tools;
  if (snapshot.network_targets.empty() || !egress_.enabled) return tools;
  EgressClientOptions client;
  client.targets = snapshot.network_targets;
  client.max_response_bytes = egress_.max_response_bytes;
  client.timeout_ms = egress_.request_timeout_ms;
  client.max_redirects = egress_.max_redirects;
  for (HostTool& t : MakeEgressTools(std::make_shared<const EgressClient>(std::move(client)))) {
    tools.push_back(std::move(t));
  }
  return tools;
}

void Admission::AddLevelNote(std::string note) {
  if (note.empty()) return;
  LogWarning(note);
  level_notes_.push_back(std::move(note));
}

std::vector<std::string> Admission::EnvironmentNotes() const {
  std::vector<std::string> notes = level_notes_;
  if (setup_.guard && setup_.guard->landlock_abi < 1) notes.emplace_back(kNoLandlock);
  if (!degraded_note_.empty()) notes.push_back(degraded_note_);
  return notes;
}

std::vector<LimitMechanism> Admission::LimitMechanisms() const {
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
      const bool sized = setup_.sandbox.has_value() || setup_.private_mounts;
      out.push_back({std::string(spec.name),
                     sized ? "a private tmpfs of that size, and the host's disk watch"
                           : "the host's disk watch over the run's private directory"});
    } else {
      out.push_back({std::string(spec.name), RlimitName(spec.rlimit)});
    }
  }
  return out;
}

}  // namespace codeact::internal
