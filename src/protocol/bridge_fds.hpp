// The bridge's fd numbers inside a child: where the runner, the hyperlight worker and the sandbox
// launcher find the two bridge pipes (protocol.hpp: what travels on them).
#pragma once

namespace codeact::internal {

// Bridge fd numbers inside the child.
inline constexpr int kChildBridgeReadFd = 3;   // host -> child
inline constexpr int kChildBridgeWriteFd = 4;  // child -> host

}  // namespace codeact::internal
