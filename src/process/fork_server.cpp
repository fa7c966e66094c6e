#include "process/fork_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <variant>

#include "common/status_macros.hpp"
#include "common/utf8.hpp"
#include "os/background_thread.hpp"
#include "os/errno_status.hpp"
#include "os/pipe.hpp"
#include "os/resource_limits.hpp"
#include "os/unique_fd.hpp"
#include "process/child.hpp"
#include "process/launch.hpp"
#include "process/metadata_supervisor.hpp"
#include "protocol/fork_messages.hpp"

namespace codeact::internal {
namespace {

using Clock = std::chrono::steady_clock;

using protocol::kForkRunFds;
using protocol::kMaxForkCgroupFds;
// A fork answers in well under a millisecond; this only bounds a zygote that hangs.
constexpr std::chrono::seconds kForkReplyTimeout{10};
constexpr std::size_t kMaxMessage = 4096;
constexpr std::int64_t kZygoteCpuSeconds = 24 * 3600;

int MillisLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60'000));
}

// Receives one message (non-blocking socket) by `deadline`; nullopt on timeout, "" on EOF.
StatusOr<std::optional<std::string>> ReceiveBy(int fd, Clock::time_point deadline) {
  char buf[kMaxMessage];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n >= 0) return std::optional<std::string>(std::string(buf, static_cast<std::size_t>(n)));
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return ErrnoStatus("recv from the fork server", errno);
    const int left = MillisLeft(deadline);
    if (left == 0) return std::optional<std::string>();
    pollfd pfd{fd, POLLIN, 0};
    ::poll(&pfd, 1, left);
  }
}

// What a child that died with its zygote looks like: the parent-death signal killed it.
ExitInfo DiedWithZygote() {
  ExitInfo info;
  info.signal = SIGKILL;
  return info;
}

}  // namespace

StatusOr<std::shared_ptr<ForkServer>> ForkServer::Start(LaunchSpec spec,
                                                        std::chrono::milliseconds timeout,
                                                        bool in_sandbox,
                                                        std::shared_ptr<void> keep) {
  try {
    spec.bridge = true;
    spec.bridge_socket = true;
    spec.environment.insert_or_assign("CODEACT_ZYGOTE",
                                      std::string(in_sandbox ? "namespaces" : "1"));
    // RLIMIT_CPU counts a process's own CPU time, and the zygote spends some on every fork: under
    // the runs' limit it would die of SIGXCPU after enough runs, taking the runs in flight with
    // it. So the zygote gets a day, and each child sets the runs' limit (soft, and hard one
    // second above, as a cold start has) before it says ready; lowering needs no privilege.
    const std::int64_t run_cpu =
        spec.limits.Get(RLIMIT_CPU).value_or(Rlimit{RLIMIT_CPU, kZygoteCpuSeconds, 0}).soft;
    spec.environment["CODEACT_CPU_LIMIT_S"] = std::to_string(run_cpu);
    // Not above what the host itself may set (its hard limit: an unprivileged host, or one
    // started under limits, cannot raise it).
    std::int64_t zygote_cpu = kZygoteCpuSeconds;
    if (rlimit host{}; ::getrlimit(RLIMIT_CPU, &host) == 0 && host.rlim_max != RLIM_INFINITY) {
      zygote_cpu = std::min<std::int64_t>(zygote_cpu, static_cast<std::int64_t>(host.rlim_max) - 1);
    }
    zygote_cpu = std::max(run_cpu, zygote_cpu);
    spec.limits.Set(RLIMIT_CPU, zygote_cpu, zygote_cpu + 1);
    auto zygote = Child::Start(spec);
    if (!zygote.ok()) return zygote.status();
    auto ready = ReceiveBy((*zygote)->bridge_from_child_fd(), Clock::now() + timeout);
    if (!ready.ok()) return ready.status();
    if (!ready->has_value())
      return DeadlineExceeded("the fork server did not report ready in time");
    if (ready->value().empty()) return Unavailable("the fork server exited before it was ready");
    const StatusOr<protocol::ZygoteMessage> first = protocol::DecodeZygoteMessage(ready->value());
    if (!first.ok())
      return Unavailable("the fork server's first message: " + first.status().message());
    if (!std::holds_alternative<protocol::ZygoteReady>(*first)) {
      return Unavailable("the fork server's first message is not its ready message");
    }
    auto server = std::shared_ptr<ForkServer>(new ForkServer(std::move(*zygote), std::move(keep)));
    if (server->stop_read_ < 0) return ErrnoStatus("pipe2", errno);
    server->reader_ = std::thread([raw = server.get()] { raw->ReadLoop(); });
    return server;
  } catch (const std::exception& e) {
    return Internal(std::string("ForkServer::Start: ") + e.what());
  }
}

ForkServer::ForkServer(std::unique_ptr<Child> zygote, std::shared_ptr<void> keep)
    : keep_(std::move(keep)),
      zygote_(std::move(zygote)),
      socket_fd_(zygote_->bridge_from_child_fd()) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    stop_read_ = fds[0];
    stop_write_ = fds[1];
  }
}

ForkServer::~ForkServer() {
  if (reader_.joinable()) {
    const char byte = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_write_, &byte, 1);
    reader_.join();
  }
  // The zygote's children have the parent-death signal on it: they die with it.
  zygote_->KillAll();
  zygote_->Wait();
  if (stop_read_ >= 0) ::close(stop_read_);
  if (stop_write_ >= 0) ::close(stop_write_);
}

std::string ForkServer::GoneMessage() const {
  return broken_.empty() ? "the fork server is gone" : "the fork server is broken: " + broken_;
}

bool ForkServer::alive() const {
  std::lock_guard lock(mu_);
  return !dead_;
}

void ForkServer::ReadLoop() {
  YieldOnWakeUp();  // exit reports and fork answers: a run waits for neither while it runs
  char buf[kMaxMessage];
  while (true) {
    pollfd fds[2] = {{socket_fd_, POLLIN, 0}, {stop_read_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) break;
    const ssize_t n = ::recv(socket_fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;  // the zygote is gone
    StatusOr<protocol::ZygoteMessage> message =
        protocol::DecodeZygoteMessage(std::string_view(buf, static_cast<std::size_t>(n)));
    std::lock_guard lock(mu_);
    if (!message.ok()) {
      // A zygote that says what it should not is broken: no answer of it can be trusted now.
      broken_ = message.status().message();
      break;
    }
    if (const auto* exited = std::get_if<protocol::Exited>(&*message)) {
      exits_[static_cast<pid_t>(exited->pid)] =
          ExitInfoFrom(static_cast<int>(exited->status), static_cast<double>(exited->cpu_us) / 1e6);
    } else if (!std::holds_alternative<protocol::ZygoteReady>(*message)) {
      fork_reply_ = std::move(*message);
    }
    cv_.notify_all();
  }
  std::lock_guard lock(mu_);
  dead_ = true;
  cv_.notify_all();
}

Status ForkServer::Send(const std::string& message, const int* fds, int fd_count) {
  iovec iov{const_cast<char*>(message.data()), message.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * (kForkRunFds + kMaxForkCgroupFds))] = {};
  if (fd_count > kForkRunFds + kMaxForkCgroupFds) return InvalidArgument("too many fds for a fork");
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd_count > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
    std::memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * fd_count);
  }
  const auto deadline = Clock::now() + kForkReplyTimeout;
  while (::sendmsg(socket_fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return ErrnoStatus("sendmsg to the fork server", errno);
    if (MillisLeft(deadline) == 0)
      return DeadlineExceeded("the fork server does not take requests");
    pollfd pfd{socket_fd_, POLLOUT, 0};
    ::poll(&pfd, 1, MillisLeft(deadline));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Child>> ForkServer::Fork(const std::string& working_dir,
                                                  const ForkIdentity& identity) {
  try {
    if (working_dir.find('\0') != std::string::npos || working_dir.size() > kMaxMessage / 2 ||
        FirstInvalidUtf8(working_dir).has_value()) {
      return InvalidArgument("unusable working directory for a forked child");
    }
    auto token = NewRunToken();
    if (!token.ok()) return token.status();
    // Every forked child is a run child: its fd 0 is its metadata supervisor's channel.
    UniqueFd metadata_end;
    auto metadata = MakeMetadataChannel(metadata_end);
    if (!metadata.ok()) return metadata.status();
    CODEACT_ASSIGN_OR_RETURN(PipeFds out, MakePipe());
    CODEACT_ASSIGN_OR_RETURN(PipeFds err, MakePipe());
    CODEACT_ASSIGN_OR_RETURN(PipeFds to, MakePipe());
    CODEACT_ASSIGN_OR_RETURN(PipeFds from, MakePipe());
    for (int fd : {out.read.get(), err.read.get(), from.read.get()}) {
      CODEACT_RETURN_IF_ERROR(SetNonBlocking(fd));
    }
    std::vector<int> fds = {metadata_end.get(), out.write.get(), err.write.get(), to.read.get(),
                            from.write.get()};
    if (identity.cgroup_join.size() > kMaxForkCgroupFds)
      return InvalidArgument("too many cgroup hierarchies for a forked child");
    std::vector<UniqueFd> cgroup_fds;
    for (const auto& file : identity.cgroup_join) {
      cgroup_fds.emplace_back(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
      if (!cgroup_fds.back()) return ErrnoStatus("open " + file, errno);
      fds.push_back(cgroup_fds.back().get());
    }

    std::lock_guard fork_lock(fork_mu_);
    {
      std::lock_guard lock(mu_);
      if (dead_) return Unavailable(GoneMessage());
      fork_reply_.reset();
    }
    const std::string message = protocol::EncodeFork(
        {*token, identity.uid, identity.uid >= 0 ? identity.workdir_bytes : 0, working_dir,
         identity.tmp_bytes, static_cast<std::int64_t>(cgroup_fds.size())});
    if (message.size() > kMaxMessage)
      return InvalidArgument("unusable working directory for a forked child");
    ++forks_;
    if (Status s = Send(message, fds.data(), static_cast<int>(fds.size())); !s.ok()) return s;
    protocol::ZygoteMessage reply;
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, kForkReplyTimeout,
                        [&] { return fork_reply_.has_value() || dead_; })) {
        // A reply that comes later would be taken for the next fork's: end this server.
        lock.unlock();
        zygote_->KillGroup();
        return DeadlineExceeded("the fork server did not answer a fork request in time");
      }
      if (!fork_reply_) return Unavailable(GoneMessage());
      reply = std::move(*fork_reply_);
      fork_reply_.reset();
    }
    if (const auto* failed = std::get_if<protocol::ForkFailed>(&reply)) {
      return Unavailable("the fork server could not fork: " + failed->message);
    }
    const auto* forked = std::get_if<protocol::Forked>(&reply);
    if (forked == nullptr)
      return Internal("the fork server answered a fork request with an exit report");
    const auto pid = static_cast<pid_t>(forked->pid);
    // The child-side ends close here: the child has its own copies now.
    return Child::Adopt(pid, std::move(*token), out.read.release(), err.read.release(),
                        to.write.release(), from.read.release(), shared_from_this(),
                        std::move(*metadata));
  } catch (const std::exception& e) {
    return Internal(std::string("ForkServer::Fork: ") + e.what());
  }
}

void ForkServer::KillGroup(pid_t pid) {
  // The zygote kills only a child it has not reaped, so this can never hit a reused pid.
  [[maybe_unused]] Status s = Send(protocol::EncodeKill(pid), nullptr, 0);
}

ExitInfo ForkServer::Wait(pid_t pid) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return exits_.count(pid) > 0 || dead_; });
  auto it = exits_.find(pid);
  if (it == exits_.end()) return DiedWithZygote();
  const ExitInfo info = it->second;
  exits_.erase(it);
  return info;
}

std::optional<ExitInfo> ForkServer::TryWait(pid_t pid) {
  std::lock_guard lock(mu_);
  auto it = exits_.find(pid);
  if (it == exits_.end()) return dead_ ? std::optional<ExitInfo>(DiedWithZygote()) : std::nullopt;
  const ExitInfo info = it->second;
  exits_.erase(it);
  return info;
}

}  // namespace codeact::internal
