// Scratch ownership: how a start tells the scratch directories of a dead codeact process (one
// that was SIGKILLed, or crashed) from those of a live one, so that it can remove them.
//
// A directory's name carries its owner: "<prefix>o<key>.<pid>.<start>-XXXXXX", where <pid> and
// <start> are the creating process's id and start time (clock ticks after boot, field 22 of
// /proc/<pid>/stat) and <key> is a hash of the boot id and the process's pid namespace. A sweep
// judges only names with its own key (same boot, same pid namespace, so the same /proc view):
// their owner is alive exactly when /proc/<pid>/stat still shows that start time — a reused pid
// has another one. Names with another key (another container sharing the directory, or an
// earlier boot) are left alone, and so are names without a tag. It costs no descriptor and no
// file: nothing remains once a process's directories are gone.
#pragma once

#include <string>
#include <vector>

namespace codeact::internal {

// $TMPDIR when it is absolute, else /tmp; without a trailing slash ("" for "/"). On a root host
// whose TMPDIR other users cannot search (the runs' own uids could not reach their scratch), the
// runtime directory /run/codeact instead (root's, 0711; made here).
std::string ScratchBaseDir();

// "o<key>.<pid>.<start>-", to put between a directory's prefix and its random part; "" when this
// process cannot name itself (no /proc): its directories are then never swept.
std::string ScratchOwnerTag();

struct ScratchSweep {
  std::vector<std::string> removed;      // dead owners' directories removed
  std::vector<std::string> not_removed;  // dead owners' directories that could not be removed
};

// Removes from `base` the directories "codeact-*" whose owner (by its tag) is dead. Only
// directories of this user are touched, and nothing is followed. Safe while other codeact
// processes use `base`.
ScratchSweep RemoveDeadScratch(const std::string& base);

}  // namespace codeact::internal
