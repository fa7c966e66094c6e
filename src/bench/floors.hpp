// The floors `codeact bench` reads its MCP rows against: the child interpreter, loaded as a fork
// server loads it, doing a run's work with nothing of codeact around it, or only the namespaces
// of a run around it (resources/bench/fork_floor.py and warm_floor.py, each run as a process of
// its own).
#pragma once

#include <string>

#include "bench/stats.hpp"
#include "codeact/status.hpp"

namespace codeact::bench {

// Where the fork floor forks its children: as they are, or each into the namespaces and tmpfs
// mounts a run at the namespaces level gets (the isolation floor; any uid, in a user namespace).
enum class ForkInto { kPlain, kNamespaces };

struct ForkFloorFigures {
  double per_s = 0;            // forks per second
  double cpu_us_per_fork = 0;  // the forkers' CPU and their children's, per fork
};

// The fork floor: `forkers` processes forking `forks` print(1) children in all, each waited for.
// Its CPU leaves out the program's own start (the interpreter, the runner's preloads), which over
// 100 forks read as ~0.5 ms more per fork. `runner_dir` holds runner.py and its modules.
StatusOr<ForkFloorFigures> ForkFloor(const std::string& python, const std::string& runner_dir,
                                     int forkers, int forks, ForkInto into = ForkInto::kPlain);

// The warm floor's round trips: `calls` calls 0.3 s apart, each to a child forked ahead and warm,
// from its request line to its output and terminal line.
StatusOr<Samples> WarmFloorLatencies(const std::string& python, const std::string& runner_dir,
                                     int calls);

}  // namespace codeact::bench
