// UidLease: one unprivileged host uid (used as the gid too) from a configured range, held by one
// child for its whole life. On a root host every child runs as its own leased uid, never as
// root, so that concurrent runs, pooled children and fork-server children can neither signal,
// ptrace nor read one another's /proc entries and files. Unique within this process by a table,
// and across codeact processes by an flock on /run/codeact/uids/<uid> held as long as the lease
// (where /run/codeact cannot be made, within this process only). Uids are handed out round-robin,
// so a released uid is reused as late as possible.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "codeact/status.hpp"

namespace codeact::internal {

struct UidRangeSpec {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};

class UidLease {
 public:
  // RESOURCE_EXHAUSTED when every uid of the range is held.
  static StatusOr<UidLease> Acquire(const UidRangeSpec& range);

  UidLease(UidLease&& other) noexcept;
  UidLease& operator=(UidLease&& other) noexcept;
  UidLease(const UidLease&) = delete;
  UidLease& operator=(const UidLease&) = delete;
  ~UidLease();

  uid_t uid() const { return uid_; }

 private:
  UidLease(uid_t uid, int lock_fd) : uid_(uid), lock_fd_(lock_fd) {}
  void Release();
  uid_t uid_ = 0;
  int lock_fd_ = -1;
  bool held_ = false;
  friend class UidTable;
};

// Whether runs drop to leased uids here: the host is root (effective uid 0).
bool RunsNeedOwnUids();

}  // namespace codeact::internal
