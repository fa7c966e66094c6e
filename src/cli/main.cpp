// codeact: the command-line surface. Flags and wiring only; each subcommand lives in its own file.
#include <sys/prctl.h>

#include <cstddef>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/process_setup.hpp"
#include "codeact_build_config.hpp"
#include "files/scratch_owner.hpp"
#include "mcp_server/log_setup.hpp"

namespace {

constexpr const char* kUsage = R"(usage: codeact <command> [options]

commands:
  run FILE|-        validate and run code; prints the result JSON (exit 0 when it succeeded)
  describe          print the execute_code tool definition and the agent instructions
  bench             measure the performance figures (latency percentiles, rates) and print a table
  validate FILE|-   check code against the validator policy; prints the report as JSON
  mcp               serve execute_code over MCP (JSON-RPC on stdio)
  serve             serve execute_code over HTTP (REST, MCP Streamable HTTP, metrics)
  repl              an interactive loop on one session: variables are kept between inputs
  selftest          try the threat model's attacks and print what the isolation level contained
  setup-cgroups     (as root, once) give a user the cgroup subtree its runs go under

options of every command:
  --log-level L     debug, info (the default), warning, error or off: the lowest level of the log
                    lines on stderr (the MCP server's, and the library's warnings)
  --log-format F    text (the default) or json: one JSON object per line,
                    {"time","level","component","message"}
  --version         print the version and exit

run `codeact <command> --help` for a command's options.
)";

// Takes --log-level and --log-format (as "--flag value" or "--flag=value", anywhere before a
// lone "--") out of `args` and applies them. False, with the message printed, on a bad value.
bool TakeLogFlags(std::vector<std::string>& args) {
  std::optional<std::string> level;
  std::optional<std::string> format;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    bool taken = false;
    for (auto [name, slot] :
         {std::pair{"--log-level", &level}, std::pair{"--log-format", &format}}) {
      const std::string flag = name;
      if (a == flag) {
        if (i + 1 >= args.size()) {
          std::cerr << "codeact: " << flag << " needs a value\n";
          return false;
        }
        *slot = args[++i];
        taken = true;
      } else if (a.rfind(flag + "=", 0) == 0) {
        *slot = a.substr(flag.size() + 1);
        taken = true;
      }
    }
    if (!taken) rest.push_back(a);
  }
  args = std::move(rest);
  if (!level && !format) return true;
  codeact::internal::LogSettings settings;
  if (level) {
    auto parsed = codeact::internal::ParseLogLevel(*level);
    if (!parsed.ok()) {
      std::cerr << "codeact: " << parsed.status().message() << "\n";
      return false;
    }
    settings.level = *parsed;
  }
  if (format) {
    auto parsed = codeact::internal::ParseLogFormat(*format);
    if (!parsed.ok()) {
      std::cerr << "codeact: " << parsed.status().message() << "\n";
      return false;
    }
    settings.format = *parsed;
  }
  codeact::internal::ApplyLogSettings(settings);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace codeact::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!TakeLogFlags(args)) return kExitUsage;
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    std::cout << "codeact " << codeact::internal::kVersion << "\n";
    return kExitOk;
  }
  // Nothing another process of the same uid starts (a run on a non-root host) may read this
  // process's memory, environment or fds through /proc.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const std::string command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  RaiseOpenFileLimit();
  // What a codeact process that died (SIGKILL, a crash) left in the scratch directory goes now;
  // a live one's directories are left alone (files/scratch_owner.hpp).
  if (command != "--help" && command != "-h" && command != "help") {
    (void)codeact::internal::RemoveDeadScratch(codeact::internal::ScratchBaseDir());
  }
  if (command == "run") return CmdRun(rest);
  if (command == "mcp") return CmdMcp(rest);
  if (command == "serve") return CmdServe(rest);
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
