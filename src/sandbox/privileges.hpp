// Privileges: the last steps before exec. no_new_privs (no setuid or file-capability gain
// through exec), every capability dropped from the bounding, ambient, effective, permitted and
// inheritable sets, then the seccomp filter (seccomp_filter.hpp). Each step succeeds or fails
// the start (setup_report.hpp).
#pragma once

namespace codeact::internal {

void DropPrivileges();

// Its parts, for a caller that changes its uid in between (zygote_child.hpp): the ambient set
// first, the other sets last; the bounding set is emptied by the parent that forks such callers
// (EmptyBoundingSet below) and checked by them (BoundingSetIsEmpty).
void ClearAmbientCapabilities();
void ClearCapabilities();

// The bounding set emptied, for a process that keeps its own capabilities (it never execs) and
// passes the empty set on to every child it forks: 0, or the errno of the drop that failed.
int EmptyBoundingSet();
// Whether EmptyBoundingSet has run in this process or one it was forked from.
bool BoundingSetIsEmpty();

}  // namespace codeact::internal
