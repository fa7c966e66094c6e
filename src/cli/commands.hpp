// The codeact subcommands. Each returns the process exit code: 0 success, 1 the code was
// rejected or did not succeed, 2 a bad invocation. The command table (command_table.cpp) lists
// them once: main dispatches from it, and `codeact --help` and docs/cli.md are made from it.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cli/args.hpp"
#include "cli/flag_table.hpp"

namespace codeact::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

struct Command {
  std::string_view name;      // "run"
  std::string_view synopsis;  // what follows "codeact NAME": "[options] FILE|-"
  std::string_view summary;   // one line for `codeact --help`
  int (*run)(const std::vector<std::string>& args);
  std::vector<FlagDoc> (*flags)();  // the command's own flag table
  bool provider_flags;              // takes the provider flags (provider_flags.hpp) too
  bool hidden;                      // left out of `codeact --help` and docs/cli.md
};

std::span<const Command> CommandTable();
// The command of that name; null when there is none.
const Command* FindCommand(std::string_view name);
// `codeact --help`: the commands and the options every command takes.
std::string MainUsage();
// A command's help: "usage: codeact NAME SYNOPSIS", then `prose`, its options and the provider's.
std::string CommandHelp(std::string_view name, std::string_view prose);

// How every command starts: `--help` prints CommandHelp (the exit code kExitOk); otherwise `argv`
// is parsed against the command's flags (Command::flags, and the provider's where
// Command::provider_flags), and a parse error, or a count of positional arguments other than
// `positionals`, is printed as "codeact NAME: ..." followed by the help (kExitUsage). The
// arguments, or the exit code the command returns at once.
std::variant<Args, int> StartCommand(std::string_view name, std::string_view prose,
                                     const std::vector<std::string>& argv,
                                     std::size_t positionals = 0);

// Prints "codeact NAME: MESSAGE" on stderr; returns kExitUsage.
int UsageError(std::string_view name, std::string_view message);

// StartCommand, then the command's own flag table applied to `values` (ApplyFlags): an error is
// a UsageError.
template <typename Values>
std::variant<Args, int> StartCommand(std::string_view name, std::string_view prose,
                                     const std::vector<std::string>& argv,
                                     const FlagTable<Values>& table, Values& values,
                                     std::size_t positionals = 0) {
  std::variant<Args, int> started = StartCommand(name, prose, argv, positionals);
  if (const Args* args = std::get_if<Args>(&started)) {
    if (Status s = ApplyFlags(table, *args, values); !s.ok()) return UsageError(name, s.message());
  }
  return started;
}

int CmdValidate(const std::vector<std::string>& args);
int CmdRun(const std::vector<std::string>& args);
int CmdDescribe(const std::vector<std::string>& args);
int CmdBench(const std::vector<std::string>& args);
int CmdMcp(const std::vector<std::string>& args);
int CmdServe(const std::vector<std::string>& args);
int CmdRepl(const std::vector<std::string>& args);
int CmdSelftest(const std::vector<std::string>& args);
int CmdSetupCgroups(const std::vector<std::string>& args);
int CmdDocs(const std::vector<std::string>& args);

// Each command's own flag table, as docs.
std::vector<FlagDoc> ValidateFlagDocs();
std::vector<FlagDoc> RunFlagDocs();
std::vector<FlagDoc> DescribeFlagDocs();
std::vector<FlagDoc> BenchFlagDocs();
std::vector<FlagDoc> McpFlagDocs();
std::vector<FlagDoc> ServeFlagDocs();
std::vector<FlagDoc> ReplFlagDocs();
std::vector<FlagDoc> SelftestFlagDocs();
std::vector<FlagDoc> SetupCgroupsFlagDocs();
std::vector<FlagDoc> DocsFlagDocs();
// The options every command takes (--log-level, --log-format, --version), as docs.
std::vector<FlagDoc> GlobalFlagDocs();

}  // namespace codeact::cli
