// MetadataSupervisor: the host's side of the runtime guard's metadata filter
// (sandbox/metadata_filter.hpp). One per run child, on a thread of its own: it waits for the
// child's listener on the channel (the child's fd 0, a SOCK_SEQPACKET pair made by Child::Start
// and ForkServer::Fork), then answers every chmod, chown, utime and xattr call of the child
// until the child is gone or the supervisor is destroyed. The host loop never waits for it.
//
// Each call is performed by the host, never by the child: the path is resolved here, from the
// child's cwd, dirfd or root (/proc/<tid>/...), with openat2 and RESOLVE_NO_SYMLINKS, and the
// result must lie beneath one of the run's writable roots on the same mount (ContainedResolver
// below), not be a root itself (a mount root's mode is not the run's), and not be a file with
// another hard link. The call is then made on that object with the child's file-system ids
// (a root host's thread takes the child's fsuid/fsgid, which drops root's file capabilities);
// chown only to the child's own ids; xattrs of the "user." namespace only, and none set (the
// main filter refuses the set* calls). Everything else is answered EPERM. An fd-based call
// (fchmod, fchown, futimens, fremovexattr) is checked on what the child's fd refers to.
// docs/threat-model-metadata.md says what this guarantees.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/status.hpp"
#include "os/unique_fd.hpp"

namespace codeact::internal {

// Whether an object lies beneath a set of writable roots (O_PATH fds the caller opened while it
// could trust the paths), decided from what the kernel resolves: the path is walked with no
// symlink at all, and containment is the object's own ancestry (".." by ".." on one mount), so a
// directory the run swaps for a link between two checks cannot move the answer outside. Errors
// are errno values: EPERM for "not one of the run's", else what resolving gave (ENOENT, ...).
class ContainedResolver {
 public:
  explicit ContainedResolver(std::vector<UniqueFd> roots);

  // The object `path` names from `base` (an O_PATH directory: a cwd, a dirfd; with `in_root`
  // the child's root, for an absolute path), as an O_PATH fd in `out`. `follow_last` false: a
  // final symlink is the object itself (lchown and friends).
  int Resolve(int base, bool in_root, std::string_view path, bool follow_last, UniqueFd& out) const;
  // Whether `fd` (an O_PATH fd of what a child's fd refers to) is one of the run's; `child_root`
  // resolves the path the kernel shows for it.
  int CheckFd(int fd, int child_root) const;

 private:
  int Contained(int object, bool directory) const;
  int CheckObject(int object) const;
  std::vector<UniqueFd> roots_;
};

class MetadataSupervisor {
 public:
  // Takes the host's end of the channel (SO_PASSCRED is set here). Fails only when no thread
  // can be started.
  static StatusOr<std::unique_ptr<MetadataSupervisor>> Start(UniqueFd channel);
  // Stops the thread (a call it is answering is finished first) and closes the listener; the
  // child's calls after that fail (ENOSYS) instead of waiting.
  ~MetadataSupervisor();
  MetadataSupervisor(const MetadataSupervisor&) = delete;
  MetadataSupervisor& operator=(const MetadataSupervisor&) = delete;

  struct State;

 private:
  explicit MetadataSupervisor(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// A SOCK_SEQPACKET pair: `child_end` becomes the child's fd 0; the other end is served.
StatusOr<std::unique_ptr<MetadataSupervisor>> MakeMetadataChannel(UniqueFd& child_end);

}  // namespace codeact::internal
