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
constexpr const char* kValidateProse =
    "Prints {\"ok\":bool,\"violations\":[{\"line\",\"col\",\"rule\",\"message\",\"hint\"}]}.\n"
    "Exit status: 0 when the code is allowed, 1 when it has violations, 2 for a bad invocation.\n";
const FlagTable<ValidationPolicy>& ValidateFlagTable() {
  static const FlagTable<ValidationPolicy> table = [] {
    FlagTable<ValidationPolicy> t = {
        // First: the policy it reads replaces the whole policy.
        {{"--policy", "FILE", "",
          "validator policy as JSON lists (custom lists replace the defaults)"},
         [](const std::string& file, ValidationPolicy& policy) {
           auto text = ReadInput(file, internal::kMaxConfigFileBytes, "policy file");
           if (!text.ok()) return text.status();
           auto parsed = PolicyFromJson(*text);
           if (!parsed.ok()) return InvalidArgument(file + ": " + parsed.status().message());
           policy = std::move(*parsed);
           return Status::Ok();
         }},
        {{"--allow-import", "M", "", "allow one more module"},
         [](const std::string& m, ValidationPolicy& policy) {
           policy.extra_allowed_imports.push_back(m);
           return Status::Ok();
         }},
        {{"--block-import", "M", "", "block a module"},
         [](const std::string& m, ValidationPolicy& policy) {
           policy.extra_blocked_imports.push_back(m);
           return Status::Ok();
         }},
    };
    t[1].doc.repeatable = t[2].doc.repeatable = true;
    return t;
  }();
  return table;
}

}  // namespace

std::vector<FlagDoc> ValidateFlagDocs() { return DocsOf(ValidateFlagTable()); }

int CmdValidate(const std::vector<std::string>& argv) {
  ValidationPolicy policy;
  auto started = StartCommand("validate", kValidateProse, argv, ValidateFlagTable(), policy, 1);
  const Args* args = std::get_if<Args>(&started);
  if (args == nullptr) return std::get<int>(started);

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
