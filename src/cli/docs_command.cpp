// codeact docs cli|limits|result: the reference pages' generated blocks, printed from the tables
// they document (the command and flag tables, the limit table, the result-field table). The
// files under docs/ hold this output between marker lines, and the docs.generated test fails
// when a file's block differs from what this prints.

#include <iostream>

#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"
#include "json/result_fields.hpp"
#include "limits/limit_table.hpp"
#include "os/resource_limits.hpp"

namespace codeact::cli {
namespace {

std::string CliDoc() {
  std::string out;
  std::string provider_takers;
  for (const Command& c : CommandTable()) {
    if (c.hidden) continue;
    out += "## codeact " + std::string(c.name) + "\n\n";
    out += "`codeact " + std::string(c.name) + " " + std::string(c.synopsis) +
           "`: " + std::string(c.summary) + ".\n\n";
    const std::vector<FlagDoc> own = c.flags();
    if (!own.empty()) out += FlagsMarkdown(own) + "\n";
    if (c.provider_flags) {
      out += "It takes the [provider options](#provider-options) too.\n\n";
      provider_takers += (provider_takers.empty() ? "" : ", ") + std::string(c.name);
    }
  }
  out += "## Options of every command\n\n" + FlagsMarkdown(GlobalFlagDocs()) + "\n";
  out += "## Provider options\n\nTaken by " + provider_takers +
         ". A flag of one backend given with the other is refused (exit 2).\n\n" +
         FlagsMarkdown(ProviderFlagDocs());
  return out;
}

std::string LimitsDoc() {
  using internal::LimitEnforcer;
  const ExecutionLimits defaults;
  std::string out =
      "| limit | default | minimum | enforced by | flag | meaning |\n|---|---|---|---|---|---|\n";
  for (const internal::LimitSpec& spec : internal::LimitTable()) {
    std::string enforcer = spec.enforcer == LimitEnforcer::kRlimit
                               ? "the child's " + std::string(internal::RlimitName(spec.rlimit))
                               : std::string("the host");
    if (spec.in_child_request) enforcer += "; the runner, from its request";
    out += "| `" + std::string(spec.name) + "` | " +
           internal::LimitText(spec, defaults.*spec.member) + " | " +
           internal::LimitText(spec, spec.minimum) + " | " + enforcer + " | " +
           (spec.flag.empty() ? std::string() : "`" + std::string(spec.flag) + "`") + " | " +
           std::string(spec.help) + " |\n";
  }
  return out;
}

std::string ResultDoc();  // below, from the result-field table

constexpr const char* kDocsUsage = "usage: codeact docs cli|limits|result\n";

}  // namespace

std::vector<FlagDoc> DocsFlagDocs() { return {}; }

int CmdDocs(const std::vector<std::string>& argv) {
  if (argv.size() != 1) {
    std::cerr << kDocsUsage;
    return kExitUsage;
  }
  if (argv[0] == "cli") {
    std::cout << CliDoc();
  } else if (argv[0] == "limits") {
    std::cout << LimitsDoc();
  } else if (argv[0] == "result") {
    std::cout << ResultDoc();
  } else {
    std::cerr << "codeact docs: no generated page \"" << argv[0] << "\"\n" << kDocsUsage;
    return kExitUsage;
  }
  return kExitOk;
}

namespace {

std::string ResultDoc() {
  std::string out = "| field | type | required (outputSchema) | meaning |\n|---|---|---|---|\n";
  for (const internal::ResultField& field : internal::ResultFieldTable()) {
    out += "| `" + std::string(field.name) + "` | " + std::string(field.type) + " | " +
           (field.schema_required ? "yes" : "") + " | " + std::string(field.meaning) + " |\n";
  }
  return out;
}

}  // namespace

}  // namespace codeact::cli
