#include "sandbox/privileges.hpp"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "sandbox/setup_report.hpp"

namespace codeact::internal {

void DropPrivileges() {
  Must(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "prctl(PR_SET_NO_NEW_PRIVS)");
  if (const int err = EmptyBoundingSet(); err != 0)
    FailStep("empty the capability bounding set", err);
  ClearAmbientCapabilities();
  ClearCapabilities();
}

int EmptyBoundingSet() {
  // Up to the highest capability this kernel knows (EINVAL past it).
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return errno == EINVAL ? 0 : errno;
  }
  return 0;
}

bool BoundingSetIsEmpty() {
  // EmptyBoundingSet drops every capability or fails: the first one stands for the rest.
  return ::prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0) == 0 &&
         ::prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) == 0;
}

void ClearAmbientCapabilities() {
  Must(::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0,
       "clear the ambient capabilities");
}

void ClearCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  Must(::syscall(SYS_capset, &header, data) == 0, "capset (drop all capabilities)");
}

}  // namespace codeact::internal
