#include "guard/metadata_notify.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/errno_status.hpp"
#include "sandbox/metadata_filter.hpp"

namespace codeact::internal {
namespace {

bool IsChannel(int fd) {
  int type = 0;
  socklen_t size = sizeof type;
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0 && type == SOCK_SEQPACKET;
}

long LoadFilter(const std::vector<sock_filter>& filter, unsigned flags) {
  sock_fprog prog{static_cast<unsigned short>(filter.size()),
                  const_cast<sock_filter*>(filter.data())};
  return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

std::string Failed(const char* what, int err) { return std::string(what) + ": " + ErrnoText(err); }

}  // namespace

std::string ArmMetadataNotify(const std::vector<std::string>& write_roots) {
  if (!IsChannel(kMetadataChannelFd)) {
    if (LoadFilter(MetadataFailClosedFilter(), 0) != 0)
      return Failed("loading the metadata filter failed", errno);
    return "";
  }
  // The runner has no threads yet (runner.py checks), so no TSYNC: it cannot be combined with a
  // listener without TSYNC_ESRCH, and there is nothing to synchronise.
  const long listener = LoadFilter(MetadataNotifyFilter(), SECCOMP_FILTER_FLAG_NEW_LISTENER);
  if (listener < 0) return Failed("loading the metadata notification filter failed", errno);
  const std::string payload = EncodeMetadataHello(static_cast<long>(::getuid()),
                                                  static_cast<long>(::getgid()), write_roots);
  iovec iov{const_cast<char*>(payload.data()), payload.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  const int fd = static_cast<int>(listener);
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
  ssize_t sent;
  do {
    sent = ::sendmsg(kMetadataChannelFd, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  const int send_errno = errno;
  ::close(fd);
  // Without the host's copy no call is answered: they would wait for the wall clock.
  if (sent < 0) return Failed("sending the metadata listener to the host failed", send_errno);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0) return Failed("open(/dev/null)", errno);
  const int placed = ::dup2(null, kMetadataChannelFd);  // dup2 clears O_CLOEXEC: stdin
  const int dup_errno = errno;
  ::close(null);
  if (placed < 0) return Failed("dup2(/dev/null, 0)", dup_errno);
  return "";
}

}  // namespace codeact::internal
