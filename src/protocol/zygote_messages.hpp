// The zygote's side of the fork server messages (their types and the host's side:
// fork_messages.hpp; names and fields: protocol.hpp, channel kForkServer), read and written with
// flat_json.hpp: the zygote's loop (guard/zygote_loop.hpp) runs in the guard module, which links
// no JSON library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/fork_messages.hpp"

namespace codeact::internal::protocol {

// One datagram from the host: a fork (an ASCII token, a UTF-8 workdir, integers; tmp_bytes and
// cgroup_fds 0 when absent, cgroup_fds at most kMaxForkCgroupFds) or a kill (a positive pid).
struct HostMessage {
  bool kill = false;
  ForkRequest fork;      // when !kill
  std::int64_t pid = 0;  // when kill
};
// nullopt with `error` ("malformed fork server message: ...") for anything else.
std::optional<HostMessage> DecodeHostMessage(std::string_view datagram, std::string& error);

std::string EncodeZygoteReady(std::int64_t pid);
std::string EncodeForked(std::int64_t pid);
std::string EncodeForkFailed(std::string_view message);
std::string EncodeExited(std::int64_t pid, std::int64_t status, std::int64_t cpu_us);

}  // namespace codeact::internal::protocol
