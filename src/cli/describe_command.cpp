// codeact describe [provider flags] [--format openai|mcp]
// Prints {"tools":[<execute_code definition>],"instructions":"..."}: the "tools" list is what an
// OpenAI-style chat request takes as its `tools` parameter.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"
#include "codeact/json.hpp"
#include "json/definitions.hpp"

namespace codeact::cli {

int CmdDescribe(const std::vector<std::string>& argv) {
  if (WantsHelp(argv)) {
    std::cout << "usage: codeact describe [--format openai|mcp] [options]\n"
                 "Prints {\"tools\":[<execute_code definition>],\"instructions\":\"...\"}.\n\n"
              << ProviderFlagsHelp();
    return kExitOk;
  }
  FlagSpec spec;
  spec.with_value.insert("--format");
  auto args = Args::Parse(argv, WithProviderFlags(spec));
  if (!args.ok() || !args->positionals().empty()) {
    std::cerr << "codeact describe: "
              << (args.ok() ? "takes no positional arguments" : args.status().message())
              << "\nusage: codeact describe [--format openai|mcp] [options]\n"
              << ProviderFlagsHelp();
    return kExitUsage;
  }
  const std::string format = args->Get("--format").value_or("openai");
  if (format != "openai" && format != "mcp") {
    std::cerr << "codeact describe: --format is openai or mcp\n";
    return kExitUsage;
  }
  auto provider = BuildProvider(*args, /*default_pool_size=*/0);  // describes, runs nothing
  if (!provider.ok()) {
    std::cerr << "codeact describe: " << provider.status().message() << "\n";
    return kExitUsage;
  }
  const ExecuteCodeFunction function(*provider);
  std::cout << internal::DescriptionDocumentJson(
                   function.Definition(format == "mcp" ? DefinitionFormat::kMcp
                                                       : DefinitionFormat::kOpenAI),
                   (*provider)->Instructions())
            << "\n";
  return kExitOk;
}

}  // namespace codeact::cli
