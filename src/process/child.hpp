// Child: one directly-started program (no shell) under rlimits, in its own process group,
// with stdin on /dev/null (a run child: its metadata supervisor's channel), stdout/stderr on
// pipes and two bridge pipes at fixed fd numbers.
// This folder is the only place that uses Boost.Process and POSIX process calls.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/cancellation.hpp"
#include "codeact/status.hpp"
#include "os/resource_limits.hpp"
#include "protocol/bridge_fds.hpp"

namespace codeact::internal {

class MetadataSupervisor;

struct LaunchSpec {
  std::string executable;                          // absolute path, exec'd directly
  std::vector<std::string> args;                   // argv[1..]
  std::map<std::string, std::string> environment;  // exactly this environment, nothing inherited
                                                   // (plus CODEACT_RUN_TOKEN, which Start sets)
  std::string working_dir;                         // empty: the host's working directory
  ResourceLimits limits;
  // A root host (identity of the process level): the child gives up root before exec — no
  // supplementary groups, gid and uid `run_as_uid` — after, first, entering a private mount
  // namespace in which `working_dir` is a fresh tmpfs of `private_workdir_bytes` (when > 0) owned
  // by that uid, and each of `trees` (detached trees, sandbox/idmap.hpp; the caller keeps the fds
  // open until Start returns) is attached at its path. -1: the child keeps the host's identity.
  std::int64_t run_as_uid = -1;
  std::int64_t private_workdir_bytes = 0;
  std::vector<std::pair<int, std::string>> trees;
  bool bridge = true;  // open the two bridge pipes at kChildBridgeReadFd/kChildBridgeWriteFd
  // With `bridge`: fds 3 and 4 are both one end of a SOCK_SEQPACKET socket pair instead of two
  // pipes (a fork server's control channel, which carries fds); the host's two bridge fds are
  // the other end, non-blocking.
  bool bridge_socket = false;
  // A run child (not with bridge_socket): its fd 0 is the channel of a MetadataSupervisor
  // (metadata_supervisor.hpp) instead of /dev/null; the runtime guard hands it the child's
  // metadata listener and puts /dev/null there. The supervisor lives as long as the Child.
  bool metadata_channel = false;
  // The run's cgroup's join files (RunCgroup::join_files), which the child joins before exec;
  // empty: it stays in the host's.
  std::vector<std::string> cgroup_join;
};

struct ExitInfo {
  bool exited = false;  // normal exit: exit_code valid
  int exit_code = -1;
  int signal = 0;          // killed by this signal when !exited
  double cpu_seconds = 0;  // user + system of the child (and reaped descendants)
};

// 32 random hex digits: the CODEACT_RUN_TOKEN a child and its descendants carry.
StatusOr<std::string> NewRunToken();

// How a child the host did not fork itself (a fork server's, see fork_server.hpp) is killed and
// reaped: through its parent, which alone may reap it, so a kill can never hit a reused pid.
class ChildControl {
 public:
  virtual ~ChildControl() = default;
  virtual void KillGroup(pid_t pid) = 0;  // SIGKILL to its process group unless already reaped
  virtual ExitInfo Wait(pid_t pid) = 0;   // blocks until its exit is known
  virtual std::optional<ExitInfo> TryWait(pid_t pid) = 0;
};

class Child {
 public:
  // All-or-nothing: every rlimit, the process group, the parent-death signal, the fd layout
  // apply in the child before exec, or Start fails with the reason and leaves nothing behind.
  // A failed step is named in the message, e.g. "chdir(/x) failed: No such file or directory"
  // or "execve(/usr/bin/nope) failed: ...". Signal dispositions and the signal mask are reset
  // to the defaults in the child. Returns once the program has been exec'd.
  // PR_SET_PDEATHSIG fires when the *thread* that called Start exits: start long-lived
  // children from a thread that outlives them.
  static StatusOr<std::unique_ptr<Child>> Start(const LaunchSpec& spec);

  // Kills the group and reaps the child if the caller did not.
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const;
  // Host ends; all O_CLOEXEC. stdout, stderr and from_child are O_NONBLOCK (poll them and
  // read with DrainAvailable). to_child is *blocking*: writing a frame returns once the child
  // has taken it into the pipe. That cannot deadlock as long as the child reads fd 3
  // continuously (the runner does, on its own), and a child that stops reading is ended by the
  // wall-clock watchdog's KillAll(), after which the blocked write fails with EPIPE. Write with
  // WriteAll() below, which turns a dead reader into a Status instead of a host-killing SIGPIPE.
  // -1 once closed (or when LaunchSpec::bridge is false). Not thread-safe, unlike KillAll/Wait.
  int stdout_fd() const;
  int stderr_fd() const;
  int bridge_to_child_fd() const;    // host writes frames here
  int bridge_from_child_fd() const;  // host reads frames here
  void CloseBridgeToChild();         // lets the child see EOF
  // True when the child has closed its end of the bridge or written to it: for an idle child
  // that has sent its ready frame, either means it is dead or useless. Shows the death of a child
  // at once, before it can be reaped (a forked child's parent reports its exit a moment later).
  bool BridgeHungUpOrBusy() const;

  // SIGKILL to the whole process group, then to every process that still carries this
  // child's run token in its environment (daemons that left the group with setsid); the token
  // sweep of /proc repeats until a pass finds no new process. Idempotent; async with respect
  // to Wait (a watchdog thread may call it while another thread waits).
  // Call it *before* Wait at the end of a run: once the child has been reaped its group id may
  // be reused, so KillAll then only sweeps by token. Limits: a process that overwrote its own
  // environment, or whose /proc entry the host cannot read, escapes the sweep: where the run
  // has a cgroup, its kill (RunCgroup::KillAll) replaces this.
  void KillAll();

  // Only the first half of KillAll: SIGKILL to the process group, no sweep. One system call, for
  // the hot path; KillAll must still follow before Wait.
  void KillGroup();

  // Reaps the child; blocks until it exits. Idempotent (returns the same info again).
  ExitInfo Wait();
  // Non-blocking reap.
  std::optional<ExitInfo> TryWait();

  // The random token placed in the child's environment as CODEACT_RUN_TOKEN.
  const std::string& run_token() const;

 private:
  friend class ForkServer;
  // A child forked by someone else on our behalf: takes ownership of the four host-side fds;
  // kill and reap go through `control`.
  static std::unique_ptr<Child> Adopt(pid_t pid, std::string token, int stdout_fd, int stderr_fd,
                                      int to_child_fd, int from_child_fd,
                                      std::shared_ptr<ChildControl> control,
                                      std::unique_ptr<MetadataSupervisor> metadata);

  struct Impl;
  explicit Child(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace codeact::internal
