// RunCommand: a short trusted helper command with stdin data, capped output and a timeout.
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
#include <string>
#include <vector>

#include "process/boost_process.hpp"
#include "process/child.hpp"
#include "process/launch.hpp"
#include "process/posix_util.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

// After the timeout kill, pipes normally close within milliseconds; a process that escaped
// the group (setsid) may hold them open forever, so draining stops after this.
constexpr std::chrono::milliseconds kDrainAfterKill{1000};
// Exit polling interval when pidfd_open is unavailable (kernels before 5.3).
constexpr int kExitPollMs = 10;
constexpr std::size_t kStdinChunkBytes = 64 * 1024;

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

}  // namespace

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   const std::string& stdin_data, std::chrono::milliseconds timeout,
                                   std::int64_t max_output_bytes, const std::string& working_dir,
                                   const CancellationToken& cancel) {
  try {
    if (argv.empty()) return InvalidArgument("RunCommand needs at least the command name");
    if (timeout.count() < 0) return InvalidArgument("the timeout must not be negative");
    if (max_output_bytes < 0) return InvalidArgument("max_output_bytes must not be negative");
    auto executable = ResolveExecutable(argv[0]);
    if (!executable.ok()) return executable.status();
    if (cancel.cancelled()) {
      CommandResult never;
      never.cancelled = true;
      return never;
    }
    // Cancellation wakes the poll below through this; registered before the launch and
    // unregistered (the registration's destructor) before the fd closes.
    UniqueFd cancel_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!cancel_fd) return ErrnoStatus("eventfd", errno);
    const CancellationRegistration wake_on_cancel = cancel.OnCancel([fd = cancel_fd.get()] {
      const std::uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
    });

    auto in = MakePipe();
    if (!in.ok()) return in.status();
    auto out = MakePipe();
    if (!out.ok()) return out.status();
    auto err = MakePipe();
    if (!err.ok()) return err.status();
    for (int fd : {in->write.get(), out->read.get(), err->read.get()}) {
      if (Status s = SetNonBlocking(fd); !s.ok()) return s;
    }

    LaunchPlan plan;
    plan.executable = *executable;
    plan.args.assign(argv.begin() + 1, argv.end());
    plan.working_dir = working_dir;
    plan.child_fds = {in->read.get(), out->write.get(), err->write.get()};
    // The caller's clock starts before the launch.
    const Clock::time_point deadline = Clock::now() + timeout;
    auto launched = LaunchProcess(plan);
    if (!launched.ok()) return launched.status();
    const pid_t pid = *launched;
    ReapGuard reap(pid);
    in->read.reset();
    out->write.reset();
    err->write.reset();

    // A pidfd turns "the command exited" into a poll event; pidfd_open sets O_CLOEXEC.
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    ScopedSigpipeBlock no_sigpipe;  // the command may close stdin before reading it all

    CappedBuffer stdout_buffer(max_output_bytes);
    CappedBuffer stderr_buffer(max_output_bytes);
    std::size_t stdin_offset = 0;
    if (stdin_data.empty()) in->write.reset();
    bool exited = false;
    bool timed_out = false;
    bool cancelled = false;
    Clock::time_point stop_draining = Clock::time_point::max();

    while (out->read || err->read || !exited) {
      const Clock::time_point now = Clock::now();
      if (cancel.cancelled()) {
        // Nobody wants the output any more: kill, and stop at once (the reap below is quick).
        ::kill(-pid, SIGKILL);  // still unreaped: the group id is ours
        cancelled = true;
        break;
      }
      if (!timed_out && now >= deadline) {
        ::kill(-pid, SIGKILL);  // the leader is not reaped yet, so the group id is still ours
        timed_out = true;
        stop_draining = now + kDrainAfterKill;
        in->write.reset();
      }
      if (timed_out && now >= stop_draining) break;

      const Clock::time_point until = timed_out ? stop_draining : deadline;
      const auto remaining = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      int wait_ms = static_cast<int>(std::clamp<long long>(remaining, 0, INT_MAX));
      if (!pidfd && !exited) wait_ms = std::min(wait_ms, kExitPollMs);

      pollfd fds[5];
      nfds_t count = 0;
      int in_slot = -1, out_slot = -1, err_slot = -1, pid_slot = -1;
      fds[count++] = {cancel_fd.get(), POLLIN, 0};  // read only by the check at the loop's top
      if (in->write) {
        in_slot = static_cast<int>(count);
        fds[count++] = {in->write.get(), POLLOUT, 0};
      }
      if (out->read) {
        out_slot = static_cast<int>(count);
        fds[count++] = {out->read.get(), POLLIN, 0};
      }
      if (err->read) {
        err_slot = static_cast<int>(count);
        fds[count++] = {err->read.get(), POLLIN, 0};
      }
      if (pidfd && !exited) {
        pid_slot = static_cast<int>(count);
        fds[count++] = {pidfd.get(), POLLIN, 0};
      }
      const int ready = ::poll(fds, count, wait_ms);
      if (ready < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("poll", errno);  // ReapGuard kills and reaps
      }

      if (in_slot >= 0 && fds[in_slot].revents != 0) {
        const std::size_t size = std::min(kStdinChunkBytes, stdin_data.size() - stdin_offset);
        const ssize_t n = ::write(in->write.get(), stdin_data.data() + stdin_offset, size);
        if (n > 0) stdin_offset += static_cast<std::size_t>(n);
        // EPIPE: the command stopped reading stdin, which is its right.
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || stdin_offset == stdin_data.size()) {
          in->write.reset();
        }
      }
      if (out_slot >= 0 && fds[out_slot].revents != 0 &&
          !DrainAvailable(out->read.get(), stdout_buffer)) {
        out->read.reset();
      }
      if (err_slot >= 0 && fds[err_slot].revents != 0 &&
          !DrainAvailable(err->read.get(), stderr_buffer)) {
        err->read.reset();
      }
      if (pid_slot >= 0 && fds[pid_slot].revents != 0) exited = true;
      if (!pidfd && !exited) exited = HasExited(pid);
    }

    CommandResult result;
    in->write.reset();
    out->read.reset();
    err->read.reset();
    result.exit = reap.Reap();
    result.timed_out = timed_out;
    result.cancelled = cancelled;
    result.stdout_truncated = stdout_buffer.truncated();
    result.stderr_truncated = stderr_buffer.truncated();
    result.stdout_bytes = stdout_buffer.total_bytes();
    result.stderr_bytes = stderr_buffer.total_bytes();
    result.stdout_text = stdout_buffer.Take();
    result.stderr_text = stderr_buffer.Take();
    return result;
  } catch (const std::exception& e) {
    return Internal(std::string("RunCommand: ") + e.what());
  }
}

}  // namespace codeact::internal
