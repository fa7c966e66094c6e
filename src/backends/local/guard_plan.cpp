#include "backends/local/guard_plan.hpp"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "os/errno_status.hpp"
#include "os/path_within.hpp"
#include "protocol/bridge_fds.hpp"
#include "sandbox/sandbox_config.hpp"

namespace codeact::internal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModuleName = "_codeact_guard.so";
// Device files the code may read and write (no others: no device nodes can be created either).
constexpr const char* kDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                    "/dev/urandom"};

// The kernel's Landlock ABI, probed as the guard's landlock.hpp does in the child (one kernel).
int HostLandlockAbi() {
  constexpr unsigned kVersion = 1U << 0;  // LANDLOCK_CREATE_RULESET_VERSION
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kVersion);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

// `paths` resolved, without those beneath another (merged-/usr symlinks like /bin -> usr/bin
// would be rules the child pays for twice); missing ones dropped.
std::vector<std::string> Distinct(const std::vector<std::string>& paths) {
  std::vector<fs::path> real;
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::path r = fs::canonical(p, ec);
    if (!ec) real.push_back(r);
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < real.size(); ++i) {
    bool covered = false;
    for (std::size_t j = 0; j < real.size() && !covered; ++j) {
      covered =
          j != i && PathWithin(real[i].native(), real[j].native()) && (real[i] != real[j] || j < i);
    }
    if (!covered) out.push_back(real[i].string());
  }
  return out;
}

}  // namespace

StatusOr<GuardPlan> PlanGuard(const std::string& python, const std::string& runner_dir,
                              const std::string& module, const SandboxPlan* sandbox) {
  GuardPlan plan;
  plan.landlock_abi = HostLandlockAbi();
  std::error_code ec;
  if (!fs::is_regular_file(module, ec))
    return NotFound("the runtime guard module is not at " + module);
  if (sandbox != nullptr) {
    // A hard link where the module and the directory share a file system (the copy was 1-3 ms
    // of a one-shot run on the test VM); the sandbox shows the directory read-only either way.
    const fs::path copy = fs::path(runner_dir) / kModuleName;
    fs::remove(copy, ec);
    fs::create_hard_link(module, copy, ec);
    if (ec) fs::copy_file(module, copy, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return Internal("cannot copy the runtime guard module to " + copy.string() + ": " +
                      ec.message());
    plan.module_path = (fs::path(kSandboxResourceDir) / kModuleName).string();
    // The sandbox shows the system paths at the same names and recreates their symlinks, so
    // resolving them here resolves them as the child will.
    plan.exec_paths = Distinct(sandbox->system_paths);
    plan.exec_paths.push_back(kSandboxResourceDir);
    return plan;
  }
  plan.module_path = module;
  std::vector<std::string> installation = DefaultSystemPaths();
  // The interpreter's prefix (a pyenv or /opt build) and a venv's, when outside the defaults.
  const fs::path real = fs::canonical(python, ec);
  if (ec) return NotFound("interpreter " + python + ": " + ec.message());
  installation.push_back(real.parent_path().parent_path().string());
  installation.push_back(fs::absolute(python).parent_path().parent_path().string());
  installation.push_back(runner_dir);
  plan.exec_paths = Distinct(installation);
  if (std::find(plan.exec_paths.begin(), plan.exec_paths.end(), "/") != plan.exec_paths.end()) {
    return FailedPrecondition(
        "the interpreter's installation is /: the runtime guard would fence nothing");
  }
  return plan;
}

RuntimeGuardSpec GuardSpecForRun(const GuardPlan& plan, const RunSnapshot& snapshot,
                                 const std::string& scratch_dir, bool sandboxed) {
  RuntimeGuardSpec spec;
  spec.exec = plan.exec_paths;
  spec.bridge_fds = {kChildBridgeReadFd, kChildBridgeWriteFd};
  spec.max_threads = snapshot.limits.max_processes;
  if (sandboxed) {
    spec.write = {kSandboxWorkDir, "/tmp"};
  } else {
    spec.write = {ProcessWorkDir(scratch_dir), ProcessTmpDir(scratch_dir)};
    spec.tmp = ProcessTmpDir(scratch_dir);
    spec.read.push_back("/etc/localtime");  // time.localtime(); the sandbox has none
  }
  for (const auto& m : snapshot.mounts) {
    const std::string& path = sandboxed ? m.mount_path : m.host_path;
    (m.mode == MountMode::kReadOnly ? spec.read : spec.write).push_back(path);
  }
  spec.write.insert(spec.write.end(), std::begin(kDevices), std::end(kDevices));
  return spec;
}

std::string ProcessWorkDir(const std::string& scratch_dir) { return scratch_dir + "/work"; }
std::string ProcessTmpDir(const std::string& scratch_dir) { return scratch_dir + "/tmp"; }

Status PrepareProcessScratch(const std::string& scratch_dir) {
  for (const std::string& dir : {ProcessWorkDir(scratch_dir), ProcessTmpDir(scratch_dir)}) {
    if (::mkdir(dir.c_str(), 0700) != 0)
      return Internal("cannot create " + dir + ": " + ErrnoText(errno));
  }
  return Status::Ok();
}

}  // namespace codeact::internal
