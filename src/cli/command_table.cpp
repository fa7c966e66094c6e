#include <array>
#include <iostream>
#include <utility>

#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"

namespace codeact::cli {
namespace {

constexpr auto kCommands = std::to_array<Command>({
    {"run", "[options] FILE|-",
     "validate and run code; prints the result JSON (exit 0 when it succeeded)", CmdRun,
     RunFlagDocs, true, false},
    {"describe", "[options]", "print the execute_code tool definition and the agent instructions",
     CmdDescribe, DescribeFlagDocs, true, false},
    {"bench", "[options]",
     "measure the performance figures (latency percentiles, rates) and print a table", CmdBench,
     BenchFlagDocs, false, false},
    {"validate", "[options] FILE|-",
     "check code against the validator policy; prints the report as JSON", CmdValidate,
     ValidateFlagDocs, false, false},
    {"mcp", "[options]", "serve execute_code over MCP (JSON-RPC on stdio)", CmdMcp, McpFlagDocs,
     true, false},
    {"serve", "[options]", "serve execute_code over HTTP (REST, MCP Streamable HTTP, metrics)",
     CmdServe, ServeFlagDocs, true, false},
    {"repl", "[options]", "an interactive loop on one session: variables are kept between inputs",
     CmdRepl, ReplFlagDocs, true, false},
    {"selftest", "[options]",
     "try the threat model's attacks and print what the isolation level contained", CmdSelftest,
     SelftestFlagDocs, false, false},
    {"setup-cgroups", "[options]",
     "(as root, once) give a user the cgroup subtree its runs go under", CmdSetupCgroups,
     SetupCgroupsFlagDocs, false, false},
    {"docs", "cli|limits|result", "print a generated reference page (docs/*.md) from the tables",
     CmdDocs, DocsFlagDocs, false, true},
});

}  // namespace

std::span<const Command> CommandTable() { return kCommands; }

const Command* FindCommand(std::string_view name) {
  for (const Command& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string MainUsage() {
  std::string out = "usage: codeact <command> [options]\n\ncommands:\n";
  for (const Command& c : kCommands) {
    if (c.hidden) continue;
    std::string line = "  " + std::string(c.name);
    if (c.synopsis.find("FILE") != std::string_view::npos) line += " FILE|-";
    line.resize(std::max<std::size_t>(line.size() + 1, 20), ' ');
    out += line + std::string(c.summary) + "\n";
  }
  out += "\noptions of every command:\n" + FlagsHelp(GlobalFlagDocs());
  out += "\nrun `codeact <command> --help` for a command's options.\n";
  return out;
}

std::string CommandHelp(std::string_view name, std::string_view prose) {
  const Command* c = FindCommand(name);
  if (c == nullptr) return std::string(prose);
  std::string out = "usage: codeact " + std::string(c->name) + " " + std::string(c->synopsis) +
                    "\n" + std::string(prose);
  const std::vector<FlagDoc> own = c->flags();
  if (!own.empty()) out += "\noptions:\n" + FlagsHelp(own);
  if (c->provider_flags) out += "\nprovider options:\n" + ProviderFlagsHelp();
  return out;
}

std::variant<Args, int> StartCommand(std::string_view name, std::string_view prose,
                                     const std::vector<std::string>& argv,
                                     std::size_t positionals) {
  if (WantsHelp(argv)) {
    std::cout << CommandHelp(name, prose);
    return kExitOk;
  }
  const Command* c = FindCommand(name);
  FlagSpec spec;
  if (c != nullptr) AddToSpec(c->flags(), spec);
  auto args = Args::Parse(argv, c != nullptr && c->provider_flags ? WithProviderFlags(spec) : spec);
  std::string error;
  if (!args.ok()) {
    error = args.status().message();
  } else if (args->positionals().size() > positionals) {
    error = "unexpected argument \"" + args->positionals()[positionals] + "\"";
  } else if (args->positionals().size() < positionals) {
    error = positionals == 1 ? "expected one FILE or -" : "too few arguments";
  }
  if (!error.empty()) return UsageError(name, error + "\n" + CommandHelp(name, prose));
  return std::move(*args);
}

int UsageError(std::string_view name, std::string_view message) {
  std::cerr << "codeact " << name << ": " << message << "\n";
  return kExitUsage;
}

}  // namespace codeact::cli
