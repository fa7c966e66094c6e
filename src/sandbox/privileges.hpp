// Privileges: the last steps before exec. no_new_privs (no setuid or file-capability gain
// through exec), every capability dropped from the bounding, ambient, effective, permitted and
// inheritable sets, then the seccomp filter (seccomp_filter.hpp). Each step succeeds or fails
// the start (setup_report.hpp).
#pragma once

namespace codeact::internal {

void DropPrivileges();

}  // namespace codeact::internal
