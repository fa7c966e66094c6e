#include "process/helper_command.hpp"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/status_macros.hpp"
#include "os/errno_status.hpp"
#include "os/pipe.hpp"
#include "os/pipe_io.hpp"
#include "os/sigpipe_block.hpp"
#include "os/unique_fd.hpp"
#include "process/boost_process.hpp"
#include "process/child.hpp"
#include "process/launch.hpp"
#include "process/run_cgroup.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

// After the timeout kill, pipes normally close within milliseconds; a process that escaped
// the group (setsid) may hold them open forever, so draining stops after this.
constexpr std::chrono::milliseconds kDrainAfterKill{1000};
// Exit polling interval when pidfd_open is unavailable (kernels before 5.3).
constexpr int kExitPollMs = 10;
constexpr std::size_t kStdinChunkBytes = 64 * 1024;
// A command tool's own cgroup is there to find and kill its processes, not to limit them: the
// bounds are far above what a helper needs (the run's own limits are the run cgroup's).
constexpr RunCgroup::Limits kCommandGroupLimits{4096, 1LL << 40};

StatusOr<std::string> ResolveExecutable(const std::string& name) {
  if (name.empty()) return InvalidArgument("the command name is empty");
  if (name.find('/') != std::string::npos) return name;
  std::filesystem::path found = boost::process::v2::environment::find_executable(name);
  if (found.empty()) return NotFound("command not found in PATH: " + name);
  return found.string();
}

// Reaps `pid` on every path out of RunCommand, killing its group first if it is still owed.
class ReapGuard {
 public:
  explicit ReapGuard(pid_t pid) : pid_(pid) {}
  ~ReapGuard() {
    if (reaped_) return;
    ::kill(-pid_, SIGKILL);
    Reap();
  }
  ReapGuard(const ReapGuard&) = delete;
  ReapGuard& operator=(const ReapGuard&) = delete;

  ExitInfo Reap() {
    int status = 0;
    rusage usage{};
    pid_t r;
    do {
      r = ::wait4(pid_, &status, 0, &usage);
    } while (r < 0 && errno == EINTR);
    reaped_ = true;
    return r == pid_ ? ExitInfoFrom(status, usage) : ExitInfo{};
  }

 private:
  pid_t pid_;
  bool reaped_ = false;
};

bool HasExited(pid_t pid) {
  siginfo_t info{};
  // WNOWAIT: only look; the reap happens once, at the end, after the last group kill.
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno == ECHILD;
  }
  return info.si_pid == pid;
}

// The host's ends of the command's stdio, with the child's ends until the launch.
struct StdioPipes {
  PipeFds in, out, err;
};

// Three close-on-exec pipes, the host's ends non-blocking.
StatusOr<StdioPipes> MakeStdioPipes() {
  StdioPipes pipes;
  CODEACT_ASSIGN_OR_RETURN(pipes.in, MakePipe());
  CODEACT_ASSIGN_OR_RETURN(pipes.out, MakePipe());
  CODEACT_ASSIGN_OR_RETURN(pipes.err, MakePipe());
  for (int fd : {pipes.in.write.get(), pipes.out.read.get(), pipes.err.read.get()}) {
    CODEACT_RETURN_IF_ERROR(SetNonBlocking(fd));
  }
  return pipes;
}

// Feeds a launched command its stdin and drains its output until it has exited and closed both
// pipes, the deadline passed (then its group is killed and drained for kDrainAfterKill at
// most), or the token was cancelled (killed, not drained).
class CommandPump {
 public:
  CommandPump(pid_t pid, StdioPipes& pipes, const std::string& stdin_data,
              std::int64_t max_output_bytes, int cancel_fd, RunCgroup* group)
      : pid_(pid),
        group_(group),
        stdin_(std::move(pipes.in.write)),
        stdout_(std::move(pipes.out.read)),
        stderr_(std::move(pipes.err.read)),
        // A pidfd turns "the command exited" into a poll event; pidfd_open sets O_CLOEXEC.
        pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))),
        cancel_fd_(cancel_fd),
        stdin_data_(stdin_data),
        stdout_buffer_(max_output_bytes),
        stderr_buffer_(max_output_bytes) {
    if (stdin_data_.empty()) stdin_.reset();
  }

  Status Run(Clock::time_point deadline, const CancellationToken& cancel) {
    ScopedSigpipeBlock no_sigpipe;  // the command may close stdin before reading it all
    while (stdout_ || stderr_ || !exited_) {
      const Clock::time_point now = Clock::now();
      if (cancel.cancelled()) {
        // Nobody wants the output any more: kill, and stop at once (the reap below is quick).
        ::kill(-pid_, SIGKILL);  // still unreaped: the group id is ours
        if (group_ != nullptr) KillGroup();
        cancelled_ = true;
        break;
      }
      if (!timed_out_ && now >= deadline) {
        ::kill(-pid_, SIGKILL);  // the leader is not reaped yet, so the group id is still ours
        if (group_ != nullptr) KillGroup();
        timed_out_ = true;
        stop_draining_ = now + kDrainAfterKill;
        stdin_.reset();
      }
      if (timed_out_ && now >= stop_draining_) break;
      const Clock::time_point until = timed_out_ ? stop_draining_ : deadline;
      const auto remaining = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      int wait_ms = static_cast<int>(std::clamp<long long>(remaining, 0, INT_MAX));
      if (!pidfd_ && !exited_) wait_ms = std::min(wait_ms, kExitPollMs);
      if (Status s = PollOnce(wait_ms); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // Closes the host's ends and reaps the command.
  CommandResult Finish(ReapGuard& reap) {
    CommandResult result;
    stdin_.reset();
    stdout_.reset();
    stderr_.reset();
    result.exit = reap.Reap();
    result.timed_out = timed_out_;
    result.cancelled = cancelled_;
    result.stdout_truncated = stdout_buffer_.truncated();
    result.stderr_truncated = stderr_buffer_.truncated();
    result.stdout_bytes = stdout_buffer_.total_bytes();
    result.stderr_bytes = stderr_buffer_.total_bytes();
    result.stdout_text = stdout_buffer_.Take();
    result.stderr_text = stderr_buffer_.Take();
    return result;
  }

 private:
  // One poll of every open end and the exit, and what became ready.
  Status PollOnce(int wait_ms) {
    pollfd fds[5];
    nfds_t count = 0;
    int in_slot = -1, out_slot = -1, err_slot = -1, pid_slot = -1;
    fds[count++] = {cancel_fd_, POLLIN, 0};  // read only by the check at the loop's top
    auto add = [&](const UniqueFd& fd, short events, int& slot) {
      if (!fd) return;
      slot = static_cast<int>(count);
      fds[count++] = {fd.get(), events, 0};
    };
    add(stdin_, POLLOUT, in_slot);
    add(stdout_, POLLIN, out_slot);
    add(stderr_, POLLIN, err_slot);
    if (!exited_) add(pidfd_, POLLIN, pid_slot);
    const int ready = ::poll(fds, count, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) return Status::Ok();
      return ErrnoStatus("poll", errno);  // ReapGuard kills and reaps
    }
    if (in_slot >= 0 && fds[in_slot].revents != 0) WriteStdin();
    if (out_slot >= 0 && fds[out_slot].revents != 0 &&
        !DrainAvailable(stdout_.get(), stdout_buffer_)) {
      stdout_.reset();
    }
    if (err_slot >= 0 && fds[err_slot].revents != 0 &&
        !DrainAvailable(stderr_.get(), stderr_buffer_)) {
      stderr_.reset();
    }
    if (pid_slot >= 0 && fds[pid_slot].revents != 0) exited_ = true;
    if (!pidfd_ && !exited_) exited_ = HasExited(pid_);
    // The command is done: what it left running in its group dies with it (and lets go of the
    // pipes it may hold).
    if (exited_ && group_ != nullptr && !group_killed_) KillGroup();
    return Status::Ok();
  }

  void KillGroup() {
    group_killed_ = true;
    group_->KillAll();
  }

  void WriteStdin() {
    const std::size_t size = std::min(kStdinChunkBytes, stdin_data_.size() - stdin_offset_);
    const ssize_t n = ::write(stdin_.get(), stdin_data_.data() + stdin_offset_, size);
    if (n > 0) stdin_offset_ += static_cast<std::size_t>(n);
    // EPIPE: the command stopped reading stdin, which is its right.
    if ((n < 0 && errno != EAGAIN && errno != EINTR) || stdin_offset_ == stdin_data_.size())
      stdin_.reset();
  }

  const pid_t pid_;
  RunCgroup* const group_;  // null: the command has no cgroup of its own
  bool group_killed_ = false;
  UniqueFd stdin_, stdout_, stderr_;
  UniqueFd pidfd_;
  const int cancel_fd_;
  const std::string& stdin_data_;
  std::size_t stdin_offset_ = 0;
  CappedBuffer stdout_buffer_;
  CappedBuffer stderr_buffer_;
  bool exited_ = false;
  bool timed_out_ = false;
  bool cancelled_ = false;
  Clock::time_point stop_draining_ = Clock::time_point::max();
};

Status CheckArguments(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      std::int64_t max_output_bytes) {
  if (argv.empty()) return InvalidArgument("RunCommand needs at least the command name");
  if (timeout.count() < 0) return InvalidArgument("the timeout must not be negative");
  if (max_output_bytes < 0) return InvalidArgument("max_output_bytes must not be negative");
  return Status::Ok();
}

}  // namespace

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   const std::string& stdin_data, std::chrono::milliseconds timeout,
                                   std::int64_t max_output_bytes, const std::string& working_dir,
                                   const CancellationToken& cancel,
                                   CommandContainment containment) {
  try {
    if (Status s = CheckArguments(argv, timeout, max_output_bytes); !s.ok()) return s;
    auto executable = ResolveExecutable(argv[0]);
    if (!executable.ok()) return executable.status();
    if (cancel.cancelled()) {
      CommandResult never;
      never.cancelled = true;
      return never;
    }
    // Cancellation wakes the pump's poll through this; registered before the launch and
    // unregistered (the registration's destructor) before the fd closes.
    UniqueFd cancel_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!cancel_fd) return ErrnoStatus("eventfd", errno);
    const CancellationRegistration wake_on_cancel = cancel.OnCancel([fd = cancel_fd.get()] {
      const std::uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
    });
    auto pipes = MakeStdioPipes();
    if (!pipes.ok()) return pipes.status();

    LaunchPlan plan;
    plan.executable = *executable;
    plan.args.assign(argv.begin() + 1, argv.end());
    plan.working_dir = working_dir;
    plan.child_fds = {pipes->in.read.get(), pipes->out.write.get(), pipes->err.write.get()};
    // The caller's clock starts before the launch.
    const Clock::time_point deadline = Clock::now() + timeout;
    // Destroyed after the reap below: what is left in the group is killed, waited for, removed.
    std::unique_ptr<RunCgroup> group;
    std::string no_group;
    if (containment == CommandContainment::kAllDescendants) {
      auto made = RunCgroup::Create(CgroupSite::ForThisProcess(), kCommandGroupLimits);
      if (made.ok()) {
        group = std::move(*made);
        plan.cgroup_join = group->join_files();
      } else {
        no_group = made.status().message();
        plan.own_pid_namespace = true;
      }
    }
    auto launched = LaunchProcess(plan);
    if (!launched.ok()) {
      if (!plan.own_pid_namespace) return launched.status();
      return FailedPrecondition(
          "the command tool cannot be contained (no process it starts may outlive it): no cgroup "
          "(" +
          no_group + "), and no pid namespace of its own: " + launched.status().message());
    }
    ReapGuard reap(*launched);
    pipes->in.read.reset();
    pipes->out.write.reset();
    pipes->err.write.reset();

    CommandPump pump(*launched, *pipes, stdin_data, max_output_bytes, cancel_fd.get(), group.get());
    if (Status s = pump.Run(deadline, cancel); !s.ok()) return s;
    if (group) group->KillAll();
    return pump.Finish(reap);
  } catch (const std::exception& e) {
    return Internal(std::string("RunCommand: ") + e.what());
  }
}

}  // namespace codeact::internal
