// ArmMetadataNotify: the runtime guard's first step after no_new_privs. Where the host made the
// child's fd 0 a socket (its metadata supervisor's channel, process/metadata_supervisor.hpp),
// installs the user-notification filter for the metadata calls (sandbox/metadata_filter.hpp),
// sends the listener with the child's ids and `write_roots` over that socket, closes its own
// copy and puts /dev/null at fd 0; elsewhere installs the same calls as EPERM. Runs before
// Landlock (it opens /dev/null) and before the main filter (which refuses sendmsg). Returns ""
// or what failed.
#pragma once

#include <string>
#include <vector>

namespace codeact::internal {

std::string ArmMetadataNotify(const std::vector<std::string>& write_roots);

}  // namespace codeact::internal
