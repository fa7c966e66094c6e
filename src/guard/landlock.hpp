// Landlock: the runtime guard's filesystem (and, from ABI 4, TCP; from ABI 6, abstract UNIX
// socket and signal) fence, through the raw system calls of <linux/landlock.h>. Every access
// right the running kernel's ABI knows is handled, so whatever no rule grants is denied: reading
// and listing outside the given paths, writing outside the writable ones, creating device files
// anywhere, and all of /proc. Rules follow the path they name at the moment they are added (a
// symlink is followed); a path that does not exist is skipped.
#pragma once

#include <string>
#include <vector>

namespace codeact::internal {

struct LandlockPaths {
  std::vector<std::string> exec;   // read, list and execute beneath (the interpreter, the runner)
  std::vector<std::string> read;   // read and list beneath (read-only mounts, single files)
  std::vector<std::string> write;  // read, list, create, change, remove beneath (working dir, tmp,
                                   // read-write mounts, the harmless device files); no device
                                   // creation, no execution, no ioctl on devices
};

// The Landlock ABI version of the running kernel; 0 when it has none (or it is disabled).
int LandlockAbi();

// Restricts the calling thread and its future threads and children. no_new_privs must be set.
// Returns an empty string, or what failed with its errno text.
std::string ApplyLandlock(const LandlockPaths& paths, int abi);

}  // namespace codeact::internal
