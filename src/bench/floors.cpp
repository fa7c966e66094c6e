#include "bench/floors.hpp"

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <vector>

#include "bench/programs.hpp"
#include "codeact/executor.hpp"
#include "common/status_macros.hpp"
#include "process/helper_command.hpp"

namespace codeact::bench {
namespace {

// The floor program `name` run to its end with `args` after its runner directory: its stdout, or
// what went wrong.
StatusOr<std::string> RunFloor(std::string_view name, const std::string& python,
                               const std::string& runner_dir, std::vector<std::string> args,
                               std::chrono::seconds timeout) {
  CODEACT_ASSIGN_OR_RETURN(std::string program, ReadProgram(name));
  std::vector<std::string> argv = {python, "-I", "-S", "-c", program, runner_dir};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = internal::RunCommand(argv, "", timeout);
  if (!r.ok()) return r.status();
  if (!r->exit.exited || r->exit.exit_code != 0) {
    return Internal("the " + std::string(name) + " program failed: " + r->stdout_text +
                    r->stderr_text);
  }
  return std::move(r->stdout_text);
}

}  // namespace

uid_t FloorFirstUid() { return RunUidRange{}.first + RunUidRange{}.count; }

StatusOr<ForkFloorFigures> ForkFloor(const std::string& python, const std::string& runner_dir,
                                     int forkers, int forks, ForkInto into,
                                     const RunObjects& objects) {
  std::vector<std::string> args = {std::to_string(forkers), std::to_string(forks / forkers)};
  if (into != ForkInto::kPlain) {
    const bool process = into == ForkInto::kProcess;
    args.insert(
        args.end(),
        {process ? "process" : "namespaces",
         process && objects.first_uid ? std::to_string(*objects.first_uid) : "-",
         std::to_string(process ? objects.workdir_bytes : 0), process ? objects.scratch_base : "-",
         std::to_string(objects.max_processes), std::to_string(objects.memory_bytes)});
    args.insert(args.end(), objects.cgroup_dirs.begin(), objects.cgroup_dirs.end());
  }
  CODEACT_ASSIGN_OR_RETURN(std::string out, RunFloor(kForkFloorProgram, python, runner_dir,
                                                     std::move(args), std::chrono::seconds(300)));
  ForkFloorFigures f;
  std::istringstream line(out);
  if (!(line >> f.per_s >> f.cpu_us_per_fork) || f.per_s <= 0 || f.cpu_us_per_fork < 0)
    return Internal("the fork floor printed no rate and CPU: " + out);
  return f;
}

StatusOr<Samples> WarmFloorLatencies(const std::string& python, const std::string& runner_dir,
                                     int calls) {
  CODEACT_ASSIGN_OR_RETURN(std::string out,
                           RunFloor(kWarmFloorProgram, python, runner_dir, {std::to_string(calls)},
                                    std::chrono::seconds(60 + calls)));
  Samples samples;
  std::istringstream lines(out);
  double us = 0;
  while (lines >> us) samples.Add(std::chrono::nanoseconds(static_cast<long long>(us * 1000)));
  if (samples.size() != static_cast<std::size_t>(calls)) {
    return Internal("the warm floor printed " + std::to_string(samples.size()) + " of " +
                    std::to_string(calls) + " round trips: " + out);
  }
  return samples;
}

}  // namespace codeact::bench
