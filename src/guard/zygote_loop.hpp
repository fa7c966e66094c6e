// ZygoteLoop: the zygote's side of the fork server (process/fork_server.hpp: the host's side and
// the guarantees; the messages: protocol/zygote_messages.hpp), in the guard module rather than in
// Python. In a process whose memory its children share copy-on-write, every object Python code
// touches after a fork is a page copied, on both sides: os.fork() alone (the interpreter's
// at-fork handlers) cost each child ~170 page copies, ~5 ms of CPU on the test VM, and the
// zygote's own loop as many again. So the runner (runner_zygote.py) loads everything and then
// calls ServeForks, which forks with fork(2) and sets each child up in C++; it returns only in a
// forked child, which goes on as any pooled child.
//
// The zygote: not dumpable (nothing reads its memory or environment through /proc), SIGCHLD
// blocked and read from a signalfd, one datagram at a time from the host on `socket_fd`. It ends
// when the host is gone (its children have the parent-death signal on it). fork(2) without the
// interpreter's handlers is sound here: the zygote has one thread, which holds the GIL through
// the fork and no other lock; of the standard library's at-fork handlers only random's reseeding
// matters to a child, and the runner does that itself.
//
// Each child, before it returns to Python, in this order:
//   both kinds     RLIMIT_CPU at the runs' limit (counted from the fork); SIGCHLD unblocked; a
//                  process group of its own; its run's token written over the zygote's in its
//                  environment block (what /proc/<pid>/environ shows, so the host's sweep finds
//                  what the run spawns) and in libc's environment;
//   process level  a root host's child (uid >= 0): a private mount namespace in which its working
//                  directory is a sized tmpfs (when workdir_bytes > 0), then no groups and its
//                  run's uid and gid; dumpable again (its /proc files are its own uid's), the
//                  parent-death signal (checked against a zygote that died first); chdir; its
//                  five fds at 0-4 and every other fd closed. A failed step: exit 125 before it
//                  says ready (the host then starts one itself);
//   namespaces     forked into a new pid namespace (pid 1 there, which ignores SIGXCPU: the CPU
//                  limit is the hard one); its five fds at 0-4, then ContainZygoteChild
//                  (sandbox/zygote_child.hpp, which reports a failed step on the bridge); every
//                  other fd closed.
// The bridge's write end (fd 4) is non-blocking, as the runner wants it.
#pragma once

#include <cstdint>
#include <string>

namespace codeact::internal {

struct ZygoteLoopOptions {
  int socket_fd = 3;
  std::int64_t run_cpu_seconds = 0;  // the runs' RLIMIT_CPU
  bool namespaces = false;           // a namespaces zygote (codeact-sandbox --zygote-uids)
};

// Never returns in the zygote. In a forked child: that child's run token, set up as above.
std::string ServeForks(const ZygoteLoopOptions& options);

}  // namespace codeact::internal
