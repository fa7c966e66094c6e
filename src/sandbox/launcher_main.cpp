// codeact-sandbox: starts one command inside the `namespaces` isolation level.
//
//   codeact-sandbox --scratch DIR [--tmp-bytes N] [--work-bytes N] [--run-as UID]
//                   [--nproc N] [--system PATH]...
//                   [--bind-ro|--bind-rw HOST PATH]... -- /abs/command args...
//
// The host starts this program exactly like the runner at the `process` level (rlimits, fds 0-4,
// process group, parent-death signal, scrubbed environment), and the command inherits all of it;
// only RLIMIT_NPROC comes as --nproc, set once inside the user namespace (see
// sandbox_config.hpp).
// Three processes, as a checklist in which every step succeeds or fails the start:
//   launcher (host pid namespace): joins the run's cgroup; on a root host (--run-as) prepares the
//     trees the sandbox shows and drops to the run's unprivileged uid (run_identity.hpp); enters
//     a user namespace, then new mount/pid/net/ipc/uts/cgroup namespaces; waits for init and
//     ends the way the command ended (exit code or signal, rusage included).
//   init (pid 1 of the new pid namespace): builds the root filesystem (root_fs.hpp), names the
//     host, starts the command and reaps every orphan; when the command ends it reports the
//     status and exits, and the kernel kills whatever is left in the namespace.
//   command (pid 2): drops privileges, loads the seccomp filter, execs. It is not pid 1, so the
//     kernel's signals (SIGXCPU of RLIMIT_CPU) reach it with their default effect. A zygote
//     (--zygote-uids) is uid 0 of the user namespace instead, keeps its capabilities there and
//     runs without the filter: each child it forks drops them and loads the filter itself
//     (zygote_child.hpp).
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "protocol/bridge_fds.hpp"
#include "sandbox/namespaces.hpp"
#include "sandbox/privileges.hpp"
#include "sandbox/root_fs.hpp"
#include "sandbox/run_identity.hpp"
#include "sandbox/sandbox_config.hpp"
#include "sandbox/seccomp_filter.hpp"
#include "sandbox/setup_report.hpp"

extern "C" char** environ;

namespace codeact::internal {
namespace {

// Dies with the parent: a sandbox whose host is gone has nothing to report to.
void FollowParent(pid_t expected_parent, const std::string& who) {
  Must(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, "prctl(PR_SET_PDEATHSIG) in the " + who);
  if (::getppid() != expected_parent) ::_exit(kSandboxSetupFailedExit);
}

// Ends this process the way `status` (from waitpid) says its child ended.
[[noreturn]] void EndLike(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    ::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : kSandboxSetupFailedExit);
}

[[noreturn]] void RunCommand(const SandboxConfig& c) {
  FollowParent(1, "command");
  if (IsZygote(c)) {
    // It keeps what it needs to contain each child it forks (zygote_child.hpp), which drops it all
    // before the child runs anything of the run's.
    Must(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "prctl(PR_SET_NO_NEW_PRIVS)");
  } else {
    DropPrivileges();
    InstallSeccompFilter();
  }
  std::vector<char*> argv;
  for (const auto& a : c.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execve(argv[0], argv.data(), environ);
  FailStep("execve " + c.command[0], errno);
}

[[noreturn]] void RunInit(const SandboxConfig& c, int status_fd) {
  FollowParent(0, "sandbox init");  // the launcher lives outside this pid namespace: ppid 0
  BuildAndEnterRoot(c);
  // A container's seccomp profile may refuse sethostname to a caller without CAP_SYS_ADMIN in the
  // container (podman's default): the new UTS namespace then keeps its copy of the container's
  // name, which is all the code could learn (docs/containers.md).
  if (::sethostname("codeact", 7) != 0 && errno != EPERM) FailStep("sethostname", errno);
  const pid_t command = ::fork();
  Must(command >= 0, "fork the command");
  if (command == 0) {
    ::close(status_fd);
    RunCommand(c);
  }
  ::close(kChildBridgeReadFd);  // see Main
  ::close(kChildBridgeWriteFd);
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, 0);
    if (done == command) {
      [[maybe_unused]] ssize_t ignored = ::write(status_fd, &status, sizeof status);
      ::_exit(0);
    }
    if (done < 0 && errno != EINTR) ::_exit(kSandboxSetupFailedExit);
  }
}

int Main(int argc, char** argv) {
  auto config = DecodeSandboxArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!config.ok()) FailStep("arguments", EINVAL, config.status().message());
  const pid_t host = ::getppid();

  JoinCgroup(config->cgroup_join);
  if (IsZygote(*config)) {
    PrepareTreesAsRoot(*config);
    EnterUserNamespaceAsZygote(*config);
  } else {
    if (config->run_as_uid >= 0) {
      PrepareTreesAsRoot(*config);
      DropToRunUid(static_cast<uid_t>(config->run_as_uid));
    }
    EnterUserNamespace();
  }
  if (config->nproc > 0) {
    const rlimit nproc{static_cast<rlim_t>(config->nproc), static_cast<rlim_t>(config->nproc)};
    Must(::setrlimit(RLIMIT_NPROC, &nproc) == 0, "setrlimit(RLIMIT_NPROC)");
  }
  FollowParent(host, "launcher");  // a credential change clears the parent-death signal
  EnterOtherNamespaces();

  int status_pipe[2];
  Must(::pipe2(status_pipe, O_CLOEXEC) == 0, "pipe2");
  const pid_t init = ::fork();
  Must(init >= 0, "fork the sandbox init");
  if (init == 0) {
    ::close(status_pipe[0]);
    RunInit(*config, status_pipe[1]);
  }
  ::close(status_pipe[1]);
  // From here on only the command speaks on the bridge: the host sees it close when the command
  // is done with it, and a frame after the runner's last is the command's, never a leftover.
  ::close(kChildBridgeReadFd);
  ::close(kChildBridgeWriteFd);

  int command_status = 0;
  ssize_t got;
  do {
    got = ::read(status_pipe[0], &command_status, sizeof command_status);
  } while (got < 0 && errno == EINTR);
  int init_status = 0;
  while (::waitpid(init, &init_status, 0) < 0 && errno == EINTR) {
  }
  // Init reports the command's status; without a report, init itself failed (its setup_error
  // frame is on the bridge already) or was killed.
  EndLike(got == sizeof command_status ? command_status : init_status);
}

}  // namespace
}  // namespace codeact::internal

int main(int argc, char** argv) { return codeact::internal::Main(argc, argv); }
