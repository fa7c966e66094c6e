// codeact run [provider flags] FILE|-
#include <iostream>

#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"
#include "codeact/json.hpp"

namespace codeact::cli {

namespace {
constexpr const char* kRunHelp =
    "usage: codeact run [options] FILE|-\n"
    "Validates the code, runs it in a child interpreter under limits and prints the result JSON.\n"
    "Exit status: 0 when the run succeeded, 1 for any other outcome, 2 for a bad invocation.\n\n";
}  // namespace

int CmdRun(const std::vector<std::string>& argv) {
  if (WantsHelp(argv)) {
    std::cout << kRunHelp << ProviderFlagsHelp();
    return kExitOk;
  }
  auto args = Args::Parse(argv, WithProviderFlags({}));
  if (!args.ok() || args->positionals().size() != 1) {
    std::cerr << "codeact run: " << (args.ok() ? "expected one FILE or -" : args.status().message()) << "\n"
              << kRunHelp << ProviderFlagsHelp();
    return kExitUsage;
  }
  auto code = ReadInput(args->positionals()[0]);
  if (!code.ok()) {
    std::cerr << "codeact run: " << code.status().message() << "\n";
    return kExitUsage;
  }
  // One run: a pool would start interpreters that no run takes (unless --pool asks for one).
  auto provider = BuildProvider(*args, /*default_pool_size=*/0);
  if (!provider.ok()) {
    std::cerr << "codeact run: " << provider.status().message() << "\n";
    return kExitUsage;
  }
  InvokeOptions options;
  if (args->Has("--approve")) options.approved = true;
  const ExecutionResult result = (*provider)->Execute(*code, options);
  std::cout << ToJson(result) << "\n";
  return result.success() ? kExitOk : kExitFailed;
}

}  // namespace codeact::cli
