// Fork server messages as types (names and fields: protocol.hpp, channel kForkServer): one
// compact JSON object per SOCK_SEQPACKET datagram between the host (process/fork_server.hpp)
// and the zygote (guard/zygote_loop.hpp); the host's side is encoded and decoded here, the
// zygote's in zygote_messages.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "codeact/status.hpp"

namespace codeact::internal::protocol {

// The fds that travel with a fork (SCM_RIGHTS): the child's five (stdin, stdout, stderr, bridge
// in, bridge out), then the child's cgroup join files (RunCgroup::join_files, one per v1
// hierarchy, or one for v2), which it writes "0" to. The launcher's join files are as many
// (process/launch.hpp).
inline constexpr int kForkRunFds = 5;
inline constexpr int kMaxForkCgroupFds = 8;

// --- host -> zygote ----------------------------------------------------------------------------

// {"type":"fork",...}; the child's five fds travel with it (SCM_RIGHTS).
struct ForkRequest {
  std::string token;               // the run token written into the child's environment
  std::int64_t uid = -1;           // the uid the child becomes; -1: the zygote's
  std::int64_t workdir_bytes = 0;  // the size of its working directory's private tmpfs; 0: none
  std::string workdir;             // its working directory (UTF-8)
  // The namespaces zygote's child (sandbox/zygote_child.hpp): the size of its private /tmp (0:
  // not such a child).
  std::int64_t tmp_bytes = 0;
  std::int64_t cgroup_fds = 0;  // how many cgroup join files follow its five fds
};
std::string EncodeFork(const ForkRequest& request);
// {"type":"kill","pid":N}: SIGKILL the child's process group while it is unreaped.
std::string EncodeKill(std::int64_t pid);

// --- zygote -> host ----------------------------------------------------------------------------

struct ZygoteReady {
  std::int64_t pid = 0;
};
struct Forked {
  std::int64_t pid = 0;
};
struct ForkFailed {
  std::string message;
};
struct Exited {
  std::int64_t pid = 0;
  std::int64_t status = 0;  // the wait status
  std::int64_t cpu_us = 0;  // user + system CPU time
};
using ZygoteMessage = std::variant<ZygoteReady, Forked, ForkFailed, Exited>;

// One datagram from the zygote. INVALID_ARGUMENT, saying what is wrong, for anything but one of
// the four messages with every field of the right type and positive pids.
StatusOr<ZygoteMessage> DecodeZygoteMessage(std::string_view datagram);

}  // namespace codeact::internal::protocol
