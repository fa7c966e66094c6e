// The floors `codeact bench` reads its MCP rows against: the child interpreter, loaded as a fork
// server loads it, doing a run's work with nothing of codeact around it, or only the namespaces
// of a run around it (resources/bench/fork_floor.py and warm_floor.py, each run as a process of
// its own).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/stats.hpp"
#include "codeact/status.hpp"

namespace codeact::bench {

// Where the fork floor forks its children: as they are; each into the namespaces and tmpfs mounts a
// run at the namespaces level gets (any uid, in a user namespace); or each into what a run at the
// process level gets here (ProcessRunObjects). The last two are the isolation floors: what the
// kernel's side of a run's isolation leaves of the fork floor, with nothing of codeact's own.
enum class ForkInto { kPlain, kNamespaces, kProcess };

// What a run at the process level gets from the kernel on this host (ForkInto::kProcess): a
// scratch directory of its own with work/ and tmp/ on $TMPDIR, made before the fork and removed
// after the exit, and:
struct ProcessRunObjects {
  std::optional<uid_t> first_uid;        // its own uid, one per child from here on (a root host)
  std::int64_t workdir_bytes = 0;        // > 0: a mount namespace, a tmpfs working directory
  std::vector<std::string> cgroup_dirs;  // a group of its own in each (the per-user subtrees)
  std::int64_t max_processes = 0;        // the groups' limits
  std::int64_t memory_bytes = 0;
};

struct ForkFloorFigures {
  double per_s = 0;            // forks per second
  double cpu_us_per_fork = 0;  // the forkers' CPU and their children's, per fork
};

// The fork floor: `forkers` processes forking `forks` print(1) children in all, each waited for.
// Its CPU leaves out the program's own start (the interpreter, the runner's preloads), which over
// 100 forks read as ~0.5 ms more per fork. `runner_dir` holds runner.py and its modules.
// `process` is read for ForkInto::kProcess only.
StatusOr<ForkFloorFigures> ForkFloor(const std::string& python, const std::string& runner_dir,
                                     int forkers, int forks, ForkInto into = ForkInto::kPlain,
                                     const ProcessRunObjects& process = {});

// The warm floor's round trips: `calls` calls 0.3 s apart, each to a child forked ahead and warm,
// from its request line to its output and terminal line.
StatusOr<Samples> WarmFloorLatencies(const std::string& python, const std::string& runner_dir,
                                     int calls);

}  // namespace codeact::bench
