// The floors `codeact bench` reads its MCP rows against: the child interpreter, loaded as a fork
// server loads it, doing a run's work with nothing of codeact around it (resources/bench/
// fork_floor.py and warm_floor.py, each run as a process of its own).
#pragma once

#include <string>

#include "bench/stats.hpp"
#include "codeact/status.hpp"

namespace codeact::bench {

// The fork floor's rate: `forkers` processes forking `forks` print(1) children in all, each
// waited for, in forks per second. `runner_dir` holds runner.py and its modules.
StatusOr<double> ForkFloorRate(const std::string& python, const std::string& runner_dir,
                               int forkers, int forks);

// The warm floor's round trips: `calls` calls 0.3 s apart, each to a child forked ahead and warm,
// from its request line to its output and terminal line.
StatusOr<Samples> WarmFloorLatencies(const std::string& python, const std::string& runner_dir,
                                     int calls);

}  // namespace codeact::bench
