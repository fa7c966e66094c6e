// errno as text (ErrnoText, header-only: the launcher and the guard module use it without the
// library) and as a Status with its canonical code (CodeForErrno, ErrnoStatus).
#pragma once

#include <string.h>

#include <string>
#include <string_view>

#include "codeact/status.hpp"

namespace codeact::internal {

// strerror text for an errno value (thread-safe).
inline std::string ErrnoText(int err) {
  char buffer[256];
  // GNU strerror_r: returns a pointer to the text, which may or may not be `buffer`.
  return ::strerror_r(err, buffer, sizeof buffer);
}

// The canonical code for a failed system call.
StatusCode CodeForErrno(int err);
// "<what> failed: <strerror(err)>" with the matching code.
Status ErrnoStatus(std::string_view what, int err);

}  // namespace codeact::internal
