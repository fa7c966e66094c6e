#include "process/child.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "common/status_macros.hpp"
#include "os/errno_status.hpp"
#include "os/pipe.hpp"
#include "os/pipe_io.hpp"
#include "os/unique_fd.hpp"
#include "process/launch.hpp"
#include "process/metadata_supervisor.hpp"

namespace codeact::internal {
namespace {

// Start lays out the child's fds as stdin, stdout, stderr, bridge read, bridge write.
static_assert(kChildBridgeReadFd == 3 && kChildBridgeWriteFd == 4 && kMaxChildFds == 5);

constexpr std::string_view kRunTokenVariable = "CODEACT_RUN_TOKEN";
// A pass that finds no new token holder ends the sweep; this bounds a pathological case.
constexpr int kMaxSweepPasses = 32;
constexpr std::size_t kMaxEnvironBytes = 16u << 20;

Status ValidateSpec(const LaunchSpec& spec) {
  if (spec.executable.empty() || spec.executable.front() != '/') {
    return InvalidArgument("the executable must be an absolute path, got \"" + spec.executable +
                           "\"");
  }
  for (const auto& [key, value] : spec.environment) {
    if (key.empty() || key.find('=') != std::string::npos || key.find('\0') != std::string::npos) {
      return InvalidArgument("invalid environment variable name \"" + key + "\"");
    }
  }
  return Status::Ok();
}

// Reads /proc/<pid>/environ into `buffer` (an implausibly large one only to about
// kMaxEnvironBytes); false if it cannot be read (gone, not ours, a kernel thread).
bool ReadEnviron(pid_t pid, std::string& buffer) {
  buffer.clear();
  const std::string path = "/proc/" + std::to_string(pid) + "/environ";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  std::optional<std::string> text = ReadToEnd(fd.get(), kMaxEnvironBytes);
  if (!text) return false;
  buffer = std::move(*text);
  return true;
}

// True if the NUL-separated environment block holds exactly the entry `entry`.
bool HasEnvironEntry(std::string_view block, std::string_view entry) {
  std::size_t pos = 0;
  while ((pos = block.find(entry, pos)) != std::string_view::npos) {
    const bool starts = pos == 0 || block[pos - 1] == '\0';
    const std::size_t end = pos + entry.size();
    const bool ends = end == block.size() || block[end] == '\0';
    if (starts && ends) return true;
    pos = end;
  }
  return false;
}

// SIGKILLs every process (other than the host) whose environment carries `entry`.
void SweepByEnvironEntry(const std::string& entry) {
  const pid_t self = ::getpid();
  std::set<pid_t> killed;
  std::string environ_block;
  for (int pass = 0; pass < kMaxSweepPasses; ++pass) {
    bool found_new = false;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) return;
    while (const dirent* ent = ::readdir(proc)) {
      char* end = nullptr;
      const long value = std::strtol(ent->d_name, &end, 10);
      if (end == ent->d_name || *end != '\0' || value <= 0) continue;
      const auto pid = static_cast<pid_t>(value);
      if (pid == self) continue;
      if (!ReadEnviron(pid, environ_block) || !HasEnvironEntry(environ_block, entry)) continue;
      ::kill(pid, SIGKILL);
      // A killed process stays visible until its memory is released; only new ones (children
      // forked before the kill landed) call for another pass. Once SIGKILL is pending, fork fails.
      if (killed.insert(pid).second) found_new = true;
    }
    ::closedir(proc);
    if (!found_new) return;
  }
}

}  // namespace

StatusOr<std::string> NewRunToken() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("getrandom", errno);
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  token.reserve(2 * sizeof bytes);
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 0xF];
  }
  return token;
}

struct Child::Impl {
  pid_t pid = -1;
  std::string token;
  UniqueFd stdout_fd;
  UniqueFd stderr_fd;
  UniqueFd to_child;
  UniqueFd from_child;

  // Answers the child's metadata calls (LaunchSpec::metadata_channel); stopped with the Child.
  std::unique_ptr<MetadataSupervisor> metadata;

  // Set for a child the host did not fork: kill and reap go through its parent.
  std::shared_ptr<ChildControl> control;

  // Guards reaping: the group kill happens under it, so it can never hit a reused group id.
  std::mutex mu;
  bool reaped = false;
  ExitInfo exit;

  // Reaps if the child has exited (or always, with `block`). Caller holds `mu`.
  bool ReapLocked(bool block) {
    if (reaped) return true;
    if (control) {
      std::optional<ExitInfo> info =
          block ? std::optional<ExitInfo>(control->Wait(pid)) : control->TryWait(pid);
      if (!info) return false;
      reaped = true;
      exit = *info;
      return true;
    }
    int status = 0;
    rusage usage{};
    pid_t r;
    do {
      r = ::wait4(pid, &status, block ? 0 : WNOHANG, &usage);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return false;
    reaped = true;
    // ECHILD: someone else reaped it (a host with SIGCHLD ignored, or a stray waitpid(-1));
    // the status is lost and stays "unknown" (exited=false, signal=0).
    exit = r == pid ? ExitInfoFrom(status, usage) : ExitInfo{};
    return true;
  }
};

Child::Child(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

// What LaunchProcess needs of `spec`, with the run token in the environment (replacing any the
// spec carried); the child's fds are the caller's to add.
LaunchPlan PlanFor(const LaunchSpec& spec, const std::string& token) {
  LaunchPlan plan;
  plan.executable = spec.executable;
  plan.args = spec.args;
  plan.working_dir = spec.working_dir;
  plan.limits = spec.limits;
  plan.run_as_uid = spec.run_as_uid;
  plan.private_workdir_bytes = spec.private_workdir_bytes;
  plan.trees = spec.trees;
  plan.cgroup_join = spec.cgroup_join;
  std::vector<std::string> environment;
  environment.reserve(spec.environment.size() + 1);
  for (const auto& [key, value] : spec.environment) {
    if (key != kRunTokenVariable) environment.push_back(key + "=" + value);
  }
  environment.push_back(std::string(kRunTokenVariable) + "=" + token);
  plan.environment = std::move(environment);
  return plan;
}

// The bridge's channel, fd 3 (to the child) and fd 4 (from it): one SOCK_SEQPACKET socket for
// both when `spec.bridge_socket`, two pipes otherwise. The host ends are non-blocking.
Status OpenBridge(const LaunchSpec& spec, LaunchPlan& plan, PipeFds& to_child,
                  PipeFds& from_child) {
  if (spec.bridge_socket) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      return ErrnoStatus("socketpair", errno);
    }
    UniqueFd host_end(pair[0]);
    UniqueFd child_end(pair[1]);
    CODEACT_RETURN_IF_ERROR(SetNonBlocking(host_end.get()));
    from_child.read.reset(::fcntl(host_end.get(), F_DUPFD_CLOEXEC, 0));
    if (!from_child.read) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC)", errno);
    to_child.write = std::move(host_end);
    to_child.read = std::move(child_end);  // becomes fd 3 and fd 4 in the child
    plan.child_fds.push_back(to_child.read.get());
    plan.child_fds.push_back(to_child.read.get());
    return Status::Ok();
  }
  CODEACT_ASSIGN_OR_RETURN(to_child, MakePipe());
  CODEACT_ASSIGN_OR_RETURN(from_child, MakePipe());
  plan.child_fds.push_back(to_child.read.get());
  plan.child_fds.push_back(from_child.write.get());
  return SetNonBlocking(from_child.read.get());
}

}  // namespace

StatusOr<std::unique_ptr<Child>> Child::Start(const LaunchSpec& spec) {
  try {
    CODEACT_RETURN_IF_ERROR(ValidateSpec(spec));
    CODEACT_ASSIGN_OR_RETURN(std::string token, NewRunToken());
    LaunchPlan plan = PlanFor(spec, token);

    UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!dev_null) return ErrnoStatus("open(/dev/null)", errno);
    CODEACT_ASSIGN_OR_RETURN(PipeFds out, MakePipe());
    CODEACT_ASSIGN_OR_RETURN(PipeFds err, MakePipe());
    PipeFds to_child, from_child;
    plan.child_fds = {dev_null.get(), out.write.get(), err.write.get()};
    UniqueFd metadata_end;
    std::unique_ptr<MetadataSupervisor> metadata;
    if (spec.metadata_channel && !spec.bridge_socket) {
      CODEACT_ASSIGN_OR_RETURN(metadata, MakeMetadataChannel(metadata_end));
      plan.child_fds[0] = metadata_end.get();
    }
    if (spec.bridge) CODEACT_RETURN_IF_ERROR(OpenBridge(spec, plan, to_child, from_child));
    CODEACT_RETURN_IF_ERROR(SetNonBlocking(out.read.get()));
    CODEACT_RETURN_IF_ERROR(SetNonBlocking(err.read.get()));

    // Allocate before launching, so nothing after a successful launch can throw.
    auto impl = std::make_unique<Impl>();
    impl->token = std::move(token);
    impl->metadata = std::move(metadata);
    auto child = std::unique_ptr<Child>(new Child(std::move(impl)));

    CODEACT_ASSIGN_OR_RETURN(const pid_t pid, LaunchProcess(plan));
    // The child-side ends close when the PipeFds and dev_null go out of scope.
    Impl& state = *child->impl_;
    state.pid = pid;
    state.stdout_fd = std::move(out.read);
    state.stderr_fd = std::move(err.read);
    state.to_child = std::move(to_child.write);
    state.from_child = std::move(from_child.read);
    return child;
  } catch (const std::exception& e) {
    return Internal(std::string("Child::Start: ") + e.what());
  }
}

Child::~Child() {
  if (!impl_ || impl_->pid <= 0) return;
  bool reaped;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    reaped = impl_->reaped;
  }
  if (!reaped) {
    KillAll();
    Wait();
  }
}

std::unique_ptr<Child> Child::Adopt(pid_t pid, std::string token, int stdout_fd, int stderr_fd,
                                    int to_child_fd, int from_child_fd,
                                    std::shared_ptr<ChildControl> control,
                                    std::unique_ptr<MetadataSupervisor> metadata) {
  auto impl = std::make_unique<Impl>();
  impl->metadata = std::move(metadata);
  impl->pid = pid;
  impl->token = std::move(token);
  impl->stdout_fd = UniqueFd(stdout_fd);
  impl->stderr_fd = UniqueFd(stderr_fd);
  impl->to_child = UniqueFd(to_child_fd);
  impl->from_child = UniqueFd(from_child_fd);
  impl->control = std::move(control);
  return std::unique_ptr<Child>(new Child(std::move(impl)));
}

pid_t Child::pid() const { return impl_->pid; }
int Child::stdout_fd() const { return impl_->stdout_fd.get(); }
int Child::stderr_fd() const { return impl_->stderr_fd.get(); }
int Child::bridge_to_child_fd() const { return impl_->to_child.get(); }
int Child::bridge_from_child_fd() const { return impl_->from_child.get(); }
void Child::CloseBridgeToChild() { impl_->to_child.reset(); }

bool Child::BridgeHungUpOrBusy() const {
  if (!impl_->from_child) return true;
  pollfd pfd{impl_->from_child.get(), POLLIN, 0};
  return ::poll(&pfd, 1, 0) != 0;  // readable, hung up, or an error
}
const std::string& Child::run_token() const { return impl_->token; }

void Child::KillGroup() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->control) {
    if (!impl_->reaped) impl_->control->KillGroup(impl_->pid);
    return;
  }
  // The unreaped leader (alive or zombie) pins the group id, so this cannot hit a stranger.
  if (!impl_->reaped) ::kill(-impl_->pid, SIGKILL);
}

void Child::KillAll() {
  KillGroup();
  try {
    SweepByEnvironEntry(std::string(kRunTokenVariable) + "=" + impl_->token);
  } catch (const std::exception&) {
    // Out of memory while sweeping: the group kill above still happened.
  }
}

ExitInfo Child::Wait() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->reaped) return impl_->exit;
  }
  if (impl_->control) {
    // The parent reaps; its report is waited for without holding `mu`, so KillGroup goes on.
    const ExitInfo info = impl_->control->Wait(impl_->pid);
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->reaped) {
      impl_->reaped = true;
      impl_->exit = info;
    }
    return impl_->exit;
  }
  // Wait for the exit without reaping, so KillAll (under the mutex) never races the reap.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(impl_->pid), &info, WEXITED | WNOWAIT) < 0 &&
         errno == EINTR) {
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->ReapLocked(/*block=*/true);
  return impl_->exit;
}

std::optional<ExitInfo> Child::TryWait() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->ReapLocked(/*block=*/false)) return std::nullopt;
  return impl_->exit;
}

}  // namespace codeact::internal
