// Reading an input file the user named (code, a tools file, a policy) without trusting it: only
// a regular file, or standard input for "-", and never more than a byte cap. A device such as
// /dev/zero, a directory or a FIFO is refused before it is read (a FIFO without a writer would
// block forever, /dev/zero would never end), and a file over the cap is refused rather than cut.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "codeact/status.hpp"

namespace codeact::internal {

inline constexpr std::int64_t kMaxCodeFileBytes = 8LL << 20;
inline constexpr std::int64_t kMaxConfigFileBytes = 1LL << 20;  // tools files, policy files

// `what` names the input in messages ("code file", "tools file"). INVALID_ARGUMENT for a file
// that is not regular or is over the cap, NOT_FOUND / PERMISSION_DENIED when it cannot be opened.
// "-" reads standard input, whatever it is, up to the same cap.
StatusOr<std::string> ReadBoundedFile(const std::string& path, std::int64_t max_bytes,
                                      std::string_view what);

}  // namespace codeact::internal
