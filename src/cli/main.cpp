// codeact: the command-line surface. Flags and wiring only; each subcommand lives in its own file.
#include <sys/prctl.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/process_setup.hpp"
#include "files/scratch_owner.hpp"

namespace {

constexpr const char* kUsage = R"(usage: codeact <command> [options]

commands:
  run FILE|-        validate and run code; prints the result JSON (exit 0 when it succeeded)
  describe          print the execute_code tool definition and the agent instructions
  bench             measure the performance figures (latency percentiles, rates) and print a table
  validate FILE|-   check code against the validator policy; prints the report as JSON
  mcp               serve execute_code over MCP (JSON-RPC on stdio)
  repl              an interactive loop on one session: variables are kept between inputs
  selftest          try the threat model's attacks and print what the isolation level contained
  setup-cgroups     (as root, once) give a user the cgroup subtree its runs go under

run `codeact <command> --help` for a command's options.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace codeact::cli;
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  // Nothing another process of the same uid starts (a run on a non-root host) may read this
  // process's memory, environment or fds through /proc.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const std::string command = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  RaiseOpenFileLimit();
  // What a codeact process that died (SIGKILL, a crash) left in the scratch directory goes now;
  // a live one's directories are left alone (files/scratch_owner.hpp).
  if (command != "--help" && command != "-h" && command != "help") {
    (void)codeact::internal::RemoveDeadScratch(codeact::internal::ScratchBaseDir());
  }
  if (command == "run") return CmdRun(rest);
  if (command == "mcp") return CmdMcp(rest);
  if (command == "repl") return CmdRepl(rest);
  if (command == "describe") return CmdDescribe(rest);
  if (command == "bench") return CmdBench(rest);
  if (command == "validate") return CmdValidate(rest);
  if (command == "selftest") return CmdSelftest(rest);
  if (command == "setup-cgroups") return CmdSetupCgroups(rest);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  std::cerr << "codeact: unknown command \"" << command << "\"\n" << kUsage;
  return kExitUsage;
}
