// MetadataFilter: the runtime guard's user-notification filter for the calls that change a
// file's metadata (chmod, chown, utime and the xattr families, path- and fd-based), and the one
// message by which the child hands its listener to the host's supervisor
// (process/metadata_supervisor.hpp).
//
// Landlock has no right for these calls, and a path check inside the child races a symlink
// swap, so the child never performs them itself: each is SECCOMP_RET_USER_NOTIF, answered by the
// host, which resolves the path on its own side (docs/threat-model-metadata.md). Without a
// channel to the host (MetadataFailClosedFilter) the calls fail with EPERM instead. The guard's
// main filter still sees them first in effect: an ERRNO it returns (setuid modes, the set*xattr
// calls) takes precedence over the notification.
//
// The message, one SOCK_SEQPACKET datagram on the child's fd 0 (a socket only when the host
// made it one; the guard puts /dev/null there afterwards), with the listener as SCM_RIGHTS and
// the sender's credentials as SCM_CREDENTIALS (the host sets SO_PASSCRED):
//   "codeact-metadata/1" NUL uid NUL gid NUL root NUL root NUL ...
// uid and gid are the child's own (as its user namespace shows them, for chown's arguments);
// each root a path the run may write (the guard spec's "write"), as the child sees it.
#pragma once

#include <linux/filter.h>

#include <string>
#include <string_view>
#include <vector>

namespace codeact::internal {

inline constexpr std::string_view kMetadataMagic = "codeact-metadata/1";
inline constexpr int kMetadataChannelFd = 0;
inline constexpr std::size_t kMaxMetadataMessage = 64 * 1024;

// The system call numbers the filters below route (native ABI; those the architecture has).
const std::vector<int>& MetadataSystemCalls();

// Native ABI: MetadataSystemCalls() notify the listener, everything else is allowed (other ABIs
// too: the main filter kills them).
std::vector<sock_filter> MetadataNotifyFilter();
// The same calls answered EPERM: a guarded child whose host gave it no channel.
std::vector<sock_filter> MetadataFailClosedFilter();

// The message's payload (without its control data).
std::string EncodeMetadataHello(long uid, long gid, const std::vector<std::string>& roots);
struct MetadataHello {
  long uid = -1;
  long gid = -1;
  std::vector<std::string> roots;
};
// False when `payload` is not a well-formed message.
bool DecodeMetadataHello(std::string_view payload, MetadataHello& out);

}  // namespace codeact::internal
