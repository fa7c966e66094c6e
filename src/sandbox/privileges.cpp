#include "sandbox/privileges.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "sandbox/setup_report.hpp"

namespace codeact::internal {

void DropPrivileges() {
  Must(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "prctl(PR_SET_NO_NEW_PRIVS)");
  DropBoundingAndAmbientCapabilities();
  ClearCapabilities();
}

void DropBoundingAndAmbientCapabilities() {
  // The bounding set: up to the highest capability this kernel knows (EINVAL past it).
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;
      FailStep("drop capability " + std::to_string(cap) + " from the bounding set", errno);
    }
  }
  Must(::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0,
       "clear the ambient capabilities");
}

void ClearCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  Must(::syscall(SYS_capset, &header, data) == 0, "capset (drop all capabilities)");
}

}  // namespace codeact::internal
