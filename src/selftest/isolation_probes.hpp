// IsolationProbes: the attacks of docs/threat-model.md, each run as real code through an
// executor (validation off: the probes test the isolation level, not the validator), and what
// each one observed. Each attack is a Python program, resources/selftest/<name>.py of the data
// dir (common/data_dir.hpp), given the host-side fixture as constants ahead of it. `codeact
// selftest` prints them as a table; the tests assert them per level.
#pragma once

#include <string>
#include <vector>

#include "codeact/executor.hpp"

namespace codeact::internal {

struct ProbeReport {
  std::string name;  // e.g. "read /etc/passwd"
  // The level promises to contain it (docs/threat-model.md): at the `process` level that
  // depends on the runtime guard, and for the filesystem and /proc on Landlock under it.
  bool promised = false;
  bool contained = false;
  std::string observed;  // what happened, in a few words
};

// The "list /" probe's judgement, given the code's report (the output of
// resources/selftest/list_root.py) and the host root to compare with: contained unless the code
// saw an entry of the host's / that is not the sandbox's own. The directories leading to an
// interpreter installed outside the system paths (pyenv under /root, say) are the sandbox's own
// when they hold nothing but that way.
struct ProbeVerdict {
  bool contained = false;
  std::string observed;
};
ProbeVerdict JudgeRootListing(const std::string& child_stdout, bool ran_ok,
                              const std::string& host_root);

// The probe names, in table order.
std::vector<std::string> IsolationProbeNames();

// Runs one probe (by name) or all of them against `executor`. The host-side fixtures (a temp
// tree with a secret file, a planted symlink, a listening loopback socket) live for the call.
StatusOr<ProbeReport> RunIsolationProbe(Executor& executor, const std::string& name);
StatusOr<std::vector<ProbeReport>> RunIsolationProbes(Executor& executor);

}  // namespace codeact::internal
