// Programs the benchmarks run (realistic agent code, not toy snippets): Python files in
// resources/bench/ of the data dir (common/data_dir.hpp), installed with the runner's files.
#pragma once

#include <string>
#include <string_view>

#include "codeact/status.hpp"
#include "common/data_dir.hpp"
#include "files/bounded_read.hpp"

namespace codeact::bench {

// 50 lines of ordinary agent code: imports, a dataclass, comprehensions, f-strings, tool calls.
inline constexpr std::string_view kFiftyLineProgram = "fifty_lines";

// The fork floor: the child interpreter loaded as a fork server loads it, forking print(1) runs
// (its argv and output: the file's first comment).
inline constexpr std::string_view kForkFloorProgram = "fork_floor";

// The warm floor: the same interpreter serving print(n) calls 0.3 s apart, each in a child forked
// ahead and warm (its argv and output: the file's first comment).
inline constexpr std::string_view kWarmFloorProgram = "warm_floor";

// The text of resources/bench/<name>.py; NOT_FOUND and the like when it cannot be read.
inline StatusOr<std::string> ReadProgram(std::string_view name) {
  return internal::ReadBoundedFile(
      internal::DefaultDataDir() + "/resources/bench/" + std::string(name) + ".py", 1 << 20,
      "the benchmark program");
}

}  // namespace codeact::bench
