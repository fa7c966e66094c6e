// codeact describe [provider flags] [--format openai|openai-responses|anthropic|mcp] [--measure]
// Prints {"tools":[<execute_code definition>],"instructions":"..."}: the "tools" list is what the
// chosen API takes as its `tools` parameter. --measure prints the description's sizes instead.
#include <iostream>
#include <string>

#include "backends/executor_introspection.hpp"
#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"
#include "codeact/json.hpp"
#include "json/definitions.hpp"

namespace codeact::cli {
namespace {

constexpr const char* kDescribeProse =
    R"(Prints {"tools":[<execute_code definition>],"instructions":"..."}.
)";

struct DescribeFlags {
  DefinitionFormat format = DefinitionFormat::kOpenAI;
  bool measure = false;
};

const FlagTable<DescribeFlags>& DescribeFlagTable() {
  static const FlagTable<DescribeFlags> table = {
      {{"--format", "F", "openai",
        "openai (Chat Completions), openai-responses (Responses API), anthropic (Messages API, "
        "input_schema), mcp (tools/list entry with outputSchema); the first three say \"strict\": "
        "true (optional fields required and nullable)"},
       [](const std::string& name, DescribeFlags& f) {
         const std::optional<DefinitionFormat> format = ParseDefinitionFormat(name);
         if (!format) {
           return InvalidArgument("--format is openai, openai-responses, anthropic or mcp, got \"" +
                                  name + "\"");
         }
         f.format = *format;
         return Status::Ok();
       }},
      {{"--measure", "", "",
        "print the description's sizes instead: the core text (policy, limits, how tools are "
        "called, the result) and the details (tool signatures, mounts, network), in characters "
        "and in tokens estimated as characters / 4"},
       [](const std::string&, DescribeFlags& f) {
         f.measure = true;
         return Status::Ok();
       }},
  };
  return table;
}

// Tokens estimated offline as characters / 4, rounded up: the usual rule of thumb for English
// text and code with the GPT and Claude tokenizers; a real tokenizer may differ by 10-30 %.
std::size_t EstimatedTokens(std::size_t characters) { return (characters + 3) / 4; }

}  // namespace

std::vector<FlagDoc> DescribeFlagDocs() { return DocsOf(DescribeFlagTable()); }

int CmdDescribe(const std::vector<std::string>& argv) {
  DescribeFlags flags;
  auto started = StartCommand("describe", kDescribeProse, argv, DescribeFlagTable(), flags);
  const Args* args = std::get_if<Args>(&started);
  if (args == nullptr) return std::get<int>(started);
  auto provider = BuildProvider(*args, {.default_pool_size = 0});  // describes, runs nothing
  if (!provider.ok()) {
    std::cerr << "codeact describe: " << provider.status().message() << "\n";
    return kExitUsage;
  }
  if (flags.measure) {
    const ToolDescriptionParts parts = (*provider)->DescribeRun((*provider)->Snapshot());
    Executor& executor = (*provider)->executor();
    internal::EnvironmentReport environment;
    environment.isolation = std::string(IsolationName(executor.isolation()));
    environment.notes = internal::EnvironmentNotes(executor);
    for (auto& m : internal::LimitMechanisms(executor))
      environment.limit_mechanisms.emplace_back(std::move(m.limit), std::move(m.mechanism));
    std::cout << internal::DescriptionMeasureJson(
                     parts.core.size(), EstimatedTokens(parts.core.size()), parts.details.size(),
                     EstimatedTokens(parts.details.size()), kDescriptionCoreBudget, environment)
              << "\n";
    return kExitOk;
  }
  const ExecuteCodeFunction function(*provider);
  std::cout << internal::DescriptionDocumentJson(function.Definition(flags.format),
                                                 (*provider)->Instructions())
            << "\n";
  return kExitOk;
}

}  // namespace codeact::cli
