// The flags shared by `run`, `describe` and `mcp`: limits, mounts, environment, tools, policy
// and interpreter, and the backend (local, or hyperlight with its input directory and network
// targets), turned into a ready provider.
#pragma once

#include <memory>
#include <string>

#include "cli/args.hpp"
#include "cli/flag_table.hpp"
#include "codeact/provider.hpp"

namespace codeact::cli {

// Adds the provider flags to a command's own flags.
FlagSpec WithProviderFlags(FlagSpec spec);

// The provider's flag table: the limit flags (from the limit table), then the others.
std::vector<FlagDoc> ProviderFlagDocs();

// Text for the usage message, from the flag table.
std::string ProviderFlagsHelp();

// What a command asks of its provider beyond the flags.
struct ProviderChoices {
  // Applies without --pool: a one-shot command passes 0, so that it does not start interpreters
  // it will never use; a server keeps the library default.
  int default_pool_size = ExecutorOptions{}.warm_pool_size;
  // The provider's validator; null: the embedded one, started now.
  std::shared_ptr<Validator> validator;
  // Not null: the --tools file's tools are loaded into it, not added, for the caller to add with
  // AddHostTools once its child is starting (their names are checked against the validator's
  // import list, which waits for its start).
  std::vector<HostTool>* later_tools = nullptr;
  // ExecutorOptions::validate_in_child (the local backend; others validate in the host).
  bool validate_in_child = false;
};

StatusOr<std::shared_ptr<CodeActProvider>> BuildProvider(const Args& args,
                                                         ProviderChoices choices = {});

// Adds the --tools file's tools; a name the code could not reach is INVALID_ARGUMENT naming the
// file (exit 2).
Status AddHostTools(const Args& args, CodeActProvider& provider, std::vector<HostTool> tools);

// "auto", "process" or "namespaces"; `flag` names the flag in the error.
StatusOr<IsolationLevel> ParseIsolation(const std::string& flag, const std::string& text);

}  // namespace codeact::cli
