// codeact validate [--allow-import M]... [--block-import M]... [--policy FILE] FILE|-
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "codeact/json.hpp"
#include "codeact/validator.hpp"
#include "files/bounded_read.hpp"
#include "validation/source_decoding.hpp"

namespace codeact::cli {

namespace {
constexpr const char* kValidateHelp =
    "usage: codeact validate [--allow-import M]... [--block-import M]... [--policy FILE] FILE|-\n"
    "Prints {\"ok\":bool,\"violations\":[{\"line\",\"col\",\"rule\",\"message\",\"hint\"}]}.\n"
    "Exit status: 0 when the code is allowed, 1 when it has violations, 2 for a bad invocation.\n";
}  // namespace

int CmdValidate(const std::vector<std::string>& argv) {
  if (WantsHelp(argv)) {
    std::cout << kValidateHelp;
    return kExitOk;
  }
  auto args = Args::Parse(argv, {{"--allow-import", "--block-import", "--policy"}, {}});
  if (!args.ok()) {
    std::cerr << "codeact validate: " << args.status().message() << "\n";
    return kExitUsage;
  }
  if (args->positionals().size() != 1) {
    std::cerr << kValidateHelp;
    return kExitUsage;
  }
  ValidationPolicy policy;
  if (auto file = args->Get("--policy")) {
    auto text = ReadInput(*file, internal::kMaxConfigFileBytes, "policy file");
    if (!text.ok()) {
      std::cerr << "codeact validate: " << text.status().message() << "\n";
      return kExitUsage;
    }
    auto parsed = PolicyFromJson(*text);
    if (!parsed.ok()) {
      std::cerr << "codeact validate: " << *file << ": " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    policy = std::move(*parsed);
  }
  for (const auto& m : args->GetAll("--allow-import")) policy.extra_allowed_imports.push_back(m);
  for (const auto& m : args->GetAll("--block-import")) policy.extra_blocked_imports.push_back(m);

  auto code = ReadInput(args->positionals()[0], internal::kMaxCodeFileBytes, "code file");
  if (!code.ok()) {
    std::cerr << "codeact validate: " << code.status().message() << "\n";
    return kExitUsage;
  }
  auto validator = Validator::Embedded();
  if (!validator.ok()) {
    std::cerr << "codeact validate: " << validator.status().message() << "\n";
    return kExitUsage;
  }
  // A file is bytes: decoded as CPython would (PEP 263) before the validator sees it as text.
  internal::DecodedSource source = internal::DecodeSourceFile(*code);
  ValidationReport report;
  if (source.problem) {
    report.ok = false;
    report.violations.push_back(std::move(*source.problem));
  } else {
    report = (*validator)->Validate(source.text, policy);
  }
  std::cout << ToJson(report) << "\n";
  return report.ok ? kExitOk : kExitFailed;
}

}  // namespace codeact::cli
