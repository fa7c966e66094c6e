// codeact selftest [--isolation auto|process|namespaces] [--python PATH]
// Runs the isolation probes (src/selftest/isolation_probes.hpp) with validation off and prints a
// table: probe, expected (what the level promises), observed, contained. Exit 0 only when every
// probe the level promises to contain was contained.
#include <iomanip>
#include <iostream>

#include "backends/executor_introspection.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/provider_flags.hpp"
#include "common/status_macros.hpp"
#include "selftest/isolation_probes.hpp"

namespace codeact::cli {
namespace {

constexpr const char* kSelftestProse =
    "Tries each attack of the threat model with validation off and prints what the level "
    "contained.\n"
    "Exit 0 when every probe the level promises to contain was contained, 1 otherwise.\n";

const FlagTable<ExecutorOptions>& SelftestFlagTable() {
  static const FlagTable<ExecutorOptions> table = {
      {{"--isolation", "L", "auto", "the level to try: auto, process or namespaces"},
       [](const std::string& text, ExecutorOptions& options) {
         CODEACT_ASSIGN_OR_RETURN(options.isolation, ParseIsolation("--isolation", text));
         return Status::Ok();
       }},
      {{"--python", "PATH", "the embedded validator's installation", "child interpreter"},
       [](const std::string& path, ExecutorOptions& options) {
         options.python_path = path;
         return Status::Ok();
       }},
  };
  return table;
}

}  // namespace

std::vector<FlagDoc> SelftestFlagDocs() { return DocsOf(SelftestFlagTable()); }

int CmdSelftest(const std::vector<std::string>& argv) {
  ExecutorOptions options;
  auto started = StartCommand("selftest", kSelftestProse, argv, SelftestFlagTable(), options);
  if (const int* exit = std::get_if<int>(&started)) return *exit;
  auto executor = CreateExecutor(options);
  if (!executor.ok()) {
    std::cerr << "codeact selftest: " << executor.status().message() << "\n";
    return kExitFailed;
  }
  auto reports = internal::RunIsolationProbes(**executor);
  if (!reports.ok()) {
    std::cerr << "codeact selftest: " << reports.status().message() << "\n";
    return kExitFailed;
  }

  std::cout << "isolation level: " << IsolationName((*executor)->isolation()) << "\n\n";
  const std::vector<std::string> notes = internal::EnvironmentNotes(**executor);
  if (!notes.empty()) {
    std::cout << "environment notes:\n";
    for (const auto& note : notes) std::cout << "- " << note << "\n";
    std::cout << "\n";
  }
  std::cout << "| limit | enforced by |\n|---|---|\n";
  for (const auto& m : internal::LimitMechanisms(**executor))
    std::cout << "| " << m.limit << " | " << m.mechanism << " |\n";
  std::cout << "\n| probe | expected | observed | contained |\n|---|---|---|---|\n";
  bool kept = true;
  for (const auto& r : *reports) {
    std::cout << "| " << r.name << " | " << (r.promised ? "contained" : "not contained") << " | "
              << r.observed << " | " << (r.contained ? "yes" : "**no**") << " |\n";
    kept = kept && (r.contained || !r.promised);
  }
  std::cout << "\n"
            << (kept ? "every promised probe was contained" : "a promised probe was NOT contained")
            << "\n";
  return kept ? kExitOk : kExitFailed;
}

}  // namespace codeact::cli
