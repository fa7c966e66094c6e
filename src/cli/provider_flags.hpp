// The flags shared by `run`, `describe` and `mcp`: limits, mounts, environment, tools, policy
// and interpreter, and the backend (local, or hyperlight with its input directory and network
// targets), turned into a ready provider.
#pragma once

#include <memory>
#include <string>

#include "cli/args.hpp"
#include "codeact/provider.hpp"

namespace codeact::cli {

// Adds the provider flags to a command's own flags.
FlagSpec WithProviderFlags(FlagSpec spec);

// Text for the usage message: the limit flags (from the limit table), then the others.
std::string ProviderFlagsHelp();

// `default_pool_size` applies without --pool: a one-shot command passes 0, so that it does not
// start interpreters it will never use; a server keeps the library default. `validator`: the
// provider's (null: the embedded one, started now).
StatusOr<std::shared_ptr<CodeActProvider>> BuildProvider(
    const Args& args, int default_pool_size = ExecutorOptions{}.warm_pool_size,
    std::shared_ptr<Validator> validator = nullptr);

// "auto", "process" or "namespaces"; `flag` names the flag in the error.
StatusOr<IsolationLevel> ParseIsolation(const std::string& flag, const std::string& text);

}  // namespace codeact::cli
