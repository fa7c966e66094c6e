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

// Where the fork floor forks its children: as they are, or each into what a run at the namespaces
// or the process level gets from the kernel here (RunObjects): the isolation floors, what a
// level's isolation alone leaves of the fork floor, with nothing of codeact's own around it.
enum class ForkInto { kPlain, kNamespaces, kProcess };

// What a run gets from the kernel besides its process (ForkInto::kNamespaces and kProcess): a
// group of its own in each cgroup hierarchy, made before the fork and removed after the exit;
// at the namespaces level its namespaces and two tmpfs mounts (any uid: the floor is in a user
// namespace of its own); at the process level a scratch directory with work/ and tmp/, and:
struct RunObjects {
  std::string scratch_base;              // process: where the scratch directories go
  std::optional<uid_t> first_uid;        // process: its own uid, one per child from here on
                                         // (FloorFirstUid)
  std::int64_t workdir_bytes = 0;        // process, > 0: a mount namespace, a tmpfs working dir
  std::vector<std::string> cgroup_dirs;  // the per-user subtrees its groups are made in
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
// The first of the uids a process-level isolation floor gives its children: just past the default
// run range (RunUidRange), so never a uid a run of this host holds.
uid_t FloorFirstUid();

// `objects` is read for the isolation floors only.
StatusOr<ForkFloorFigures> ForkFloor(const std::string& python, const std::string& runner_dir,
                                     int forkers, int forks, ForkInto into = ForkInto::kPlain,
                                     const RunObjects& objects = {});

// The warm floor's round trips: `calls` calls 0.3 s apart, each to a child forked ahead and warm,
// from its request line to its output and terminal line.
StatusOr<Samples> WarmFloorLatencies(const std::string& python, const std::string& runner_dir,
                                     int calls);

}  // namespace codeact::bench
