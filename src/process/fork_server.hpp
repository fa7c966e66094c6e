// ForkServer: a pre-imported interpreter (the "zygote": resources/runner.py with
// CODEACT_ZYGOTE=1) that forks one child per run, so that a run costs a fork instead of an
// interpreter start (~1 ms of CPU instead of ~130 ms with everything a warm child preloads).
//
// The zygote is started like any child (LaunchSpec: environment, rlimits, process group,
// parent-death signal) and talks to the host over a SOCK_SEQPACKET socket at its fds 3/4. Per
// run the host passes the child's five fds (stdin on /dev/null, stdout, stderr, bridge in,
// bridge out) with SCM_RIGHTS, its private working directory and a fresh run token; the zygote
// forks, and the child applies the per-run setup before it says ready: its own process group,
// PR_SET_PDEATHSIG=SIGKILL (tied to the single-threaded zygote, which itself dies with the
// host), chdir, the fd layout with every other fd closed, default signal handling, and the run
// token written into its environment block (so the host's /proc sweep finds what it spawns).
// On a root host the zygote stays root (it never runs user code and is not dumpable) and each
// child becomes its run's own uid before it says ready, after a private mount namespace in
// which its working directory is a sized tmpfs.
// The rlimits are the zygote's, which the start key fixes; CPU time counts from the fork.
//
// The zygote alone reaps its children: the host asks it to SIGKILL a child's group ("kill"), and
// it does so only while the child is unreaped, so a kill can never hit a reused pid; it reports
// each exit with the wait status and CPU time ("exited"). The messages are typed in
// protocol/fork_messages.hpp; one the host cannot decode marks the zygote broken (no more forks).
// Nothing of one run reaches another: each child is a fresh copy of a zygote that never ran user
// code, and serves one run.
//
// Differences from a cold start, written down where a user looks (docs/warm-pool.md): children of
// one zygote share its hash seed (str hashes) and the addresses of its memory layout.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codeact/status.hpp"
#include "process/child.hpp"
#include "protocol/fork_messages.hpp"

namespace codeact::internal {

// A root host: the uid a forked child becomes (-1: the zygote's), and the size of the private
// tmpfs its working directory becomes (0: none; needs `uid`). A namespaces zygote's child
// (sandbox/zygote_child.hpp) also has a private /tmp of `tmp_bytes`. The child joins its run's
// cgroup itself, at either level, through these join files (RunCgroup::join_files), which the host
// opens and passes.
struct ForkIdentity {
  std::int64_t uid = -1;
  std::int64_t workdir_bytes = 0;
  std::int64_t tmp_bytes = 0;  // > 0: a namespaces zygote's child
  std::vector<std::string> cgroup_join;
};

class ForkServer final : public ChildControl, public std::enable_shared_from_this<ForkServer> {
 public:
  // Starts the zygote from `spec` (its `bridge_socket` is set here) and waits up to `timeout`
  // for it to load everything and report ready. Its parent-death signal follows the calling
  // thread: call from a thread that lives as long as the server.
  // `in_sandbox`: `spec` starts the zygote through the namespaces level's launcher
  // (SandboxConfig::zygote_uids_first); `keep` lives until the zygote is gone (what the launcher
  // was given: its scratch directory, its uid's lease).
  static StatusOr<std::shared_ptr<ForkServer>> Start(LaunchSpec spec,
                                                     std::chrono::milliseconds timeout,
                                                     bool in_sandbox = false,
                                                     std::shared_ptr<void> keep = nullptr);

  // Kills the zygote (its children die with it) and reaps it.
  ~ForkServer() override;
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // One child, forked now, with `working_dir` as its working directory; it has sent nothing
  // yet (its ready frame follows). Thread-safe. Fails when the zygote is gone.
  StatusOr<std::unique_ptr<Child>> Fork(const std::string& working_dir,
                                        const ForkIdentity& identity = {});

  bool alive() const;
  pid_t pid() const { return zygote_->pid(); }
  // Fork requests sent so far (a zygote is replaced after a number of them: fork_server.cpp).
  std::int64_t forks() const { return forks_.load(); }

  // ChildControl, for the children it forked.
  void KillGroup(pid_t pid) override;
  ExitInfo Wait(pid_t pid) override;
  std::optional<ExitInfo> TryWait(pid_t pid) override;

 private:
  ForkServer(std::unique_ptr<Child> zygote, std::shared_ptr<void> keep);
  void ReadLoop();
  Status Send(const std::string& message, const int* fds, int fd_count);
  std::string GoneMessage() const;  // under mu_

  std::shared_ptr<void> keep_;  // destroyed last
  std::unique_ptr<Child> zygote_;
  const int socket_fd_;  // owned by zygote_ (its bridge), non-blocking
  int stop_read_ = -1;   // a pipe end that wakes the reader for shutdown
  int stop_write_ = -1;

  std::mutex fork_mu_;  // one fork request in flight, so the replies come in order
  std::atomic<std::int64_t> forks_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool dead_ = false;   // the zygote closed its socket, or broke the protocol
  std::string broken_;  // what it sent that the host could not decode
  std::optional<protocol::ZygoteMessage> fork_reply_;  // Forked or ForkFailed
  std::map<pid_t, ExitInfo> exits_;                    // reported, not yet collected
  std::thread reader_;
};

}  // namespace codeact::internal
