#include "backends/local/sandbox_plan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "bridge/host_loop.hpp"
#include "common/data_dir.hpp"
#include "common/sha256.hpp"
#include "common/user_cache.hpp"
#include "files/mount_capture.hpp"
#include "os/path_within.hpp"
#include "process/child.hpp"
#include "process/uid_lease.hpp"
#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::seconds kProbeTimeout{10};

std::string ReadSetting(const char* path) {
  std::ifstream in(path);
  std::string value;
  in >> value;
  return value;
}

// Why a failed step failed, where the host's settings tell: user namespaces switched off, an
// AppArmor restriction, or a container's seccomp profile. (A container's masked /proc is no
// longer a failure: the sandbox runs without /proc there, mount_steps.hpp.)
std::string ExplainFailure(const std::string& message) {
  if (message.find("CLONE_NEWUSER") != std::string::npos) {
    if (ReadSetting("/proc/sys/user/max_user_namespaces") == "0") {
      return " (user namespaces are disabled: user.max_user_namespaces = 0)";
    }
    if (ReadSetting("/proc/sys/kernel/unprivileged_userns_clone") == "0") {
      return " (unprivileged user namespaces are disabled: kernel.unprivileged_userns_clone = 0)";
    }
    if (ReadSetting("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1") {
      return " (AppArmor restricts unprivileged user namespaces: "
             "kernel.apparmor_restrict_unprivileged_userns = 1)";
    }
  }
  // A container's seccomp profile (Docker's and containerd's default) refuses user namespaces to a
  // caller without CAP_SYS_ADMIN; the sysctls above then say nothing.
  if (message.find("CLONE_NEWUSER") != std::string::npos &&
      message.find("Operation not permitted") != std::string::npos &&
      (fs::exists("/.dockerenv") || fs::exists("/run/.containerenv"))) {
    return " (this container's seccomp profile refuses user namespaces: docs/containers.md)";
  }
  return "";
}

// The name of the per-user cache entry that records a passed probe, and what it must hold:
// everything a pass depends on that can change without this process knowing. Empty when a file
// cannot be read (then nothing is cached).
std::pair<std::string, std::string> ProbeCacheEntry(const SandboxPlan& plan,
                                                    const std::string& python) {
  std::ostringstream id;
  id << "codeact-sandbox-probe 1\n";
  for (const std::string& file : {plan.launcher, python}) {
    std::error_code ec;
    const fs::path real = fs::canonical(file, ec);
    struct stat st {};
    if (ec || ::stat(real.c_str(), &st) != 0) return {};
    id << real.native() << ' ' << st.st_dev << ' ' << st.st_ino << ' ' << st.st_size << ' '
       << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec << ' ' << st.st_ctim.tv_sec << '.'
       << st.st_ctim.tv_nsec << ' ' << st.st_uid << ' ' << (st.st_mode & 07777) << '\n';
  }
  for (const std::string& path : plan.system_paths) id << path << '\n';
  const std::string boot = ReadSetting("/proc/sys/kernel/random/boot_id");
  const std::string release = ReadSetting("/proc/sys/kernel/osrelease");
  if (boot.empty()) return {};
  id << boot << ' ' << release << ' ' << ::geteuid() << ' ' << RunsNeedOwnUids() << '\n';
  return {"sandbox-probe-" + Sha256Hex(id.str()).substr(0, 32), id.str()};
}

}  // namespace

StatusOr<SandboxPlan> PlanSandbox(const std::string& python, const std::string& resource_dir) {
  SandboxPlan plan;
  plan.launcher = SandboxLauncherPath();
  if (plan.launcher.empty()) return Unavailable("the codeact-sandbox launcher is not installed");
  plan.system_paths = DefaultSystemPaths();
  plan.resource_dir = resource_dir;
  std::error_code ec;
  plan.resource_source = fs::canonical(resource_dir, ec).string();
  if (ec) return NotFound("the runner's directory " + resource_dir + ": " + ec.message());
  const fs::path real = fs::canonical(python, ec);
  if (ec) return NotFound("interpreter " + python + ": " + ec.message());
  for (const auto& p : plan.system_paths) {
    if (PathWithin(real.native(), p)) return plan;
  }
  // An interpreter outside the system paths (pyenv, /opt): show its whole prefix.
  const fs::path prefix = real.parent_path().parent_path();
  if (prefix == "/" || !ReservedSandboxPath(prefix.string()).empty() ||
      PathWithin(kSandboxWorkDir, prefix.native()) || PathWithin("/tmp", prefix.native()) ||
      PathWithin(prefix.native(), "/tmp") || PathWithin(prefix.native(), kSandboxWorkDir)) {
    return Unavailable("the interpreter's installation " + prefix.string() +
                       " cannot be shown in the sandbox");
  }
  plan.system_paths.push_back(prefix.string());
  return plan;
}

namespace {

// The mount that `inner` lies beneath most closely; null when none.
const FileMount* EnclosingMount(const std::vector<FileMount>& mounts, const FileMount& inner) {
  const FileMount* outer = nullptr;
  for (const FileMount& m : mounts) {
    if (m.mount_path == inner.mount_path || !PathWithin(inner.mount_path, m.mount_path)) continue;
    if (outer == nullptr || PathWithin(m.mount_path, outer->mount_path)) outer = &m;
  }
  return outer;
}

// A mount beneath another is bound onto a point inside the other's host directory: it must be a
// directory there already, reached through directories only (the launcher follows no link).
Status CheckNestedMountPoint(const FileMount& inner, const FileMount& outer) {
  std::string at = outer.host_path;
  const std::string rest = inner.mount_path.substr(outer.mount_path.size());
  for (std::size_t pos = 1; pos <= rest.size();) {
    std::size_t next = rest.find('/', pos);
    if (next == std::string::npos) next = rest.size();
    at += "/" + rest.substr(pos, next - pos);
    pos = next + 1;
    struct stat st {};
    const bool missing = ::lstat(at.c_str(), &st) != 0;
    if (missing || !S_ISDIR(st.st_mode)) {
      return FailedPrecondition(
          "mount " + inner.mount_path + " lies beneath the mount " + outer.mount_path +
          ", so its mount point is " + at + " in that mount's host directory, which " +
          (missing               ? "does not exist"
           : S_ISLNK(st.st_mode) ? "is a symbolic link"
                                 : "is not a directory") +
          ": the namespaces level binds onto an existing directory there and changes nothing "
          "in the host's directory to make one; create the directory, or mount " +
          inner.mount_path + " elsewhere");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckSandboxMounts(const std::vector<FileMount>& mounts) {
  for (const auto& m : mounts) {
    if (const FileMount* outer = EnclosingMount(mounts, m)) {
      if (Status s = CheckNestedMountPoint(m, *outer); !s.ok()) return s;
    }
    // A read-write mount at the working directory (ProviderOptions::working_directory) is bound
    // over its private tmpfs: the run starts in the host directory instead.
    if (m.mount_path == kSandboxWorkDir && m.mode == MountMode::kReadWrite) continue;
    if (std::string why = ReservedSandboxPath(m.mount_path); !why.empty()) {
      return InvalidArgument("mount path " + m.mount_path +
                             " cannot be used at the namespaces level: " + why);
    }
  }
  return Status::Ok();
}

Status ApplySandboxPlan(const SandboxPlan& plan, const RunSnapshot& snapshot,
                        const std::string& scratch_dir, const std::vector<std::string>& cgroup_join,
                        std::int64_t run_as_uid, LaunchSpec& spec,
                        const UidRangeSpec* zygote_uids) {
  SandboxConfig c;
  if (zygote_uids != nullptr) {
    c.zygote_uids_first = zygote_uids->first;
    c.zygote_uids_count = zygote_uids->count;
  }
  c.scratch_dir = scratch_dir;
  c.cgroup_join = cgroup_join;
  c.run_as_uid = run_as_uid;
  c.system_paths = plan.system_paths;
  if (Status s = CheckSandboxMounts(snapshot.mounts); !s.ok()) return s;
  c.binds.push_back({plan.resource_source, kSandboxResourceDir, /*read_only=*/true});
  // Outer mounts before the ones beneath them (a path sorts before the paths below it), whatever
  // order they were added in: bound later, an outer mount would hide them.
  std::vector<const FileMount*> mounts;
  for (const auto& m : snapshot.mounts) mounts.push_back(&m);
  std::stable_sort(mounts.begin(), mounts.end(), [](const FileMount* a, const FileMount* b) {
    return a->mount_path < b->mount_path;
  });
  for (const FileMount* m : mounts) {
    c.binds.push_back({m->host_path, m->mount_path, m->mode == MountMode::kReadOnly});
  }
  // tmpfs pages are host memory that RLIMIT_AS does not see: the file-size limit bounds them, and
  // max_workdir_bytes, which bounds the run's scratch space (/tmp as /work), where smaller.
  c.tmp_bytes = std::min(snapshot.limits.max_file_size_bytes, snapshot.limits.max_workdir_bytes);
  c.work_bytes = snapshot.limits.max_workdir_bytes;
  if (const auto nproc = spec.limits.Take(RLIMIT_NPROC)) c.nproc = nproc->soft;
  c.command.push_back(spec.executable);
  for (const auto& a : spec.args) {
    const fs::path p(a);
    c.command.push_back(p.is_absolute() && p.parent_path() == plan.resource_dir
                            ? (fs::path(kSandboxResourceDir) / p.filename()).string()
                            : a);
  }
  spec.executable = plan.launcher;
  spec.args = EncodeSandboxArgs(c);
  spec.working_dir = scratch_dir;
  return Status::Ok();
}

Status ProbeSandbox(const SandboxPlan& plan, const std::string& python) {
  static std::mutex mu;
  static std::map<std::string, Status> cache;
  const std::string key = plan.launcher + '\0' + python;
  std::lock_guard lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const auto [entry, identity] = ProbeCacheEntry(plan, python);
  const std::optional<UserCache> user_cache = entry.empty() ? std::nullopt : UserCache::Open();
  if (user_cache && user_cache->Read(entry, 64 << 10) == identity + "pass\n") {
    cache.emplace(key, Status::Ok());
    return Status::Ok();
  }

  Status result = [&]() -> Status {
    auto scratch = TempDir::Create("codeact-probe-");
    if (!scratch.ok()) return scratch.status();
    LaunchSpec spec;
    spec.executable = python;
    spec.args = {"-I", "-S", "-c", "pass"};
    RunSnapshot snapshot;
    std::optional<UidLease> uid;  // a root host: the probe takes the same path as the runs
    if (RunsNeedOwnUids()) {
      auto lease =
          UidLease::Acquire({ExecutorOptions{}.run_uids.first, ExecutorOptions{}.run_uids.count});
      if (!lease.ok()) return lease.status();
      uid = std::move(*lease);
    }
    Status applied = ApplySandboxPlan(plan, snapshot, scratch->path(), {},
                                      uid ? static_cast<std::int64_t>(uid->uid()) : -1, spec);
    if (!applied.ok()) return applied;
    auto child = Child::Start(spec);
    if (!child.ok()) return child.status();
    // A failed step writes its setup_error frame and exits; success exits 0 without a frame.
    const auto deadline = std::chrono::steady_clock::now() + kProbeTimeout;
    while (!(*child)->TryWait()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        (*child)->KillAll();
        return DeadlineExceeded("the sandbox probe did not finish within 10 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const ExitInfo exit = (*child)->Wait();
    if (exit.exited && exit.exit_code == 0) return Status::Ok();
    Status frame =
        WaitForReadyFrame((*child)->bridge_from_child_fd(), std::chrono::milliseconds(100));
    if (frame.code() == StatusCode::kFailedPrecondition) {
      return Unavailable(frame.message() + ExplainFailure(frame.message()));
    }
    return Unavailable("the sandbox probe ended with " +
                       (exit.exited ? "exit code " + std::to_string(exit.exit_code)
                                    : "signal " + std::to_string(exit.signal)));
  }();
  cache.emplace(key, result);
  if (result.ok() && user_cache) (void)user_cache->Write(entry, identity + "pass\n");
  return result;
}

}  // namespace codeact::internal
