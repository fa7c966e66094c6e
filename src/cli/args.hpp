// A small argument reader for the codeact subcommands: "--flag value", "--flag=value",
// repeatable flags, boolean switches and positionals. Errors are values (exit code 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/status.hpp"

namespace codeact::cli {

struct FlagSpec {
  std::set<std::string> with_value;  // "--timeout", "--mount", ...
  std::set<std::string> switches;    // "--no-validate", ...
};

class Args {
 public:
  static StatusOr<Args> Parse(const std::vector<std::string>& argv, const FlagSpec& spec);

  std::optional<std::string> Get(const std::string& flag) const;  // last occurrence
  std::vector<std::string> GetAll(const std::string& flag) const;
  bool Has(const std::string& flag) const;  // given at all: a switch, or a flag with a value
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> switches_;
  std::vector<std::string> positionals_;
};

// True when the arguments ask for help ("--help" or "-h" anywhere before "--").
bool WantsHelp(const std::vector<std::string>& argv);

// Reads a whole regular file, or standard input for "-", of at most `max_bytes`
// (files/bounded_read.hpp); `what` names it in messages ("code file").
StatusOr<std::string> ReadInput(const std::string& path, std::int64_t max_bytes,
                                std::string_view what);

}  // namespace codeact::cli
