// codeact run [provider flags] FILE|-
#include <iostream>

#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"
#include "codeact/json.hpp"

namespace codeact::cli {

int CmdRun(const std::vector<std::string>& argv) {
  auto args = Args::Parse(argv, WithProviderFlags({}));
  if (!args.ok() || args->positionals().size() != 1) {
    std::cerr << "codeact run: " << (args.ok() ? "expected one FILE or -" : args.status().message()) << "\n"
              << "usage: codeact run [options] FILE|-\n" << kProviderFlagsHelp;
    return kExitUsage;
  }
  auto code = ReadInput(args->positionals()[0]);
  if (!code.ok()) {
    std::cerr << "codeact run: " << code.status().message() << "\n";
    return kExitUsage;
  }
  auto provider = BuildProvider(*args);
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
