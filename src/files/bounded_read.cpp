#include "files/bounded_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "os/errno_status.hpp"

namespace codeact::internal {
namespace {

std::string TypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string TooLarge(std::string_view what, const std::string& path, std::int64_t max_bytes) {
  return std::string(what) + " " + path + " is larger than the limit of " +
         std::to_string(max_bytes) + " bytes";
}

// Reads to EOF, or until one byte past the cap shows that the input is too large.
StatusOr<std::string> ReadCapped(int fd, std::int64_t max_bytes, std::string_view what,
                                 const std::string& path) {
  std::string data;
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return data;
    if (n < 0) {
      if (errno == EINTR) continue;
      return InvalidArgument("cannot read " + std::string(what) + " " + path + ": " +
                             ErrnoText(errno));
    }
    data.append(buf, static_cast<std::size_t>(n));
    if (static_cast<std::int64_t>(data.size()) > max_bytes)
      return InvalidArgument(TooLarge(what, path, max_bytes));
  }
}

}  // namespace

StatusOr<std::string> ReadBoundedFile(const std::string& path, std::int64_t max_bytes,
                                      std::string_view what) {
  if (path == "-") return ReadCapped(STDIN_FILENO, max_bytes, what, "(standard input)");
  const std::string named = std::string(what) + " " + path;
  // Look before opening: opening a device or a FIFO can itself block or have effects.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      return NotFound("cannot read " + named + ": it does not exist");
    if (err == EACCES) return PermissionDenied("cannot read " + named + ": " + ErrnoText(err));
    return InvalidArgument("cannot read " + named + ": " + ErrnoText(err));
  }
  if (!S_ISREG(st.st_mode))
    return InvalidArgument(named + " is " + TypeName(st.st_mode) + ", not a regular file");
  if (st.st_size > max_bytes) return InvalidArgument(TooLarge(what, path, max_bytes));
  // O_NONBLOCK: should the path have been swapped for a FIFO since the stat, the open still
  // returns at once, and the fstat below refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == EACCES) return PermissionDenied("cannot read " + named + ": " + ErrnoText(err));
    return NotFound("cannot read " + named + ": " + ErrnoText(err));
  }
  struct stat opened {};
  StatusOr<std::string> result = InvalidArgument(named + " changed while it was opened");
  if (::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode))
    result = ReadCapped(fd, max_bytes, what, path);
  ::close(fd);
  return result;
}

}  // namespace codeact::internal
