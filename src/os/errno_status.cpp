#include "os/errno_status.hpp"

#include <errno.h>

#include <string>

namespace codeact::internal {

StatusCode CodeForErrno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return StatusCode::kNotFound;
    case EACCES:
    case EPERM:
      return StatusCode::kPermissionDenied;
    case EAGAIN:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case E2BIG:
      return StatusCode::kResourceExhausted;
    case EINVAL:
    case ENOEXEC:
    case ELOOP:
    case ENAMETOOLONG:
      return StatusCode::kInvalidArgument;
    default:
      return StatusCode::kInternal;
  }
}

Status ErrnoStatus(std::string_view what, int err) {
  std::string message(what);
  message += " failed: ";
  message += ErrnoText(err);
  return Status(CodeForErrno(err), std::move(message));
}

}  // namespace codeact::internal
