#include "cli/args.hpp"

#include "files/bounded_read.hpp"

namespace codeact::cli {

StatusOr<Args> Args::Parse(const std::vector<std::string>& argv, const FlagSpec& spec) {
  Args args;
  bool only_positionals = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positionals || a == "-" || a.rfind("--", 0) != 0) {
      args.positionals_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    const auto eq = a.find('=');
    const std::string name = a.substr(0, eq);
    if (spec.switches.count(name)) {
      if (eq != std::string::npos) return InvalidArgument(name + " takes no value");
      args.switches_.insert(name);
    } else if (spec.with_value.count(name)) {
      if (eq != std::string::npos) {
        args.values_[name].push_back(a.substr(eq + 1));
      } else if (i + 1 < argv.size()) {
        args.values_[name].push_back(argv[++i]);
      } else {
        return InvalidArgument(name + " needs a value");
      }
    } else {
      return InvalidArgument("unknown option " + name);
    }
  }
  return args;
}

std::optional<std::string> Args::Get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::GetAll(const std::string& flag) const {
  auto it = values_.find(flag);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

bool Args::Has(const std::string& flag) const {
  return switches_.count(flag) > 0 || values_.count(flag) > 0;
}

bool WantsHelp(const std::vector<std::string>& argv) {
  for (const auto& a : argv) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

StatusOr<std::string> ReadInput(const std::string& path, std::int64_t max_bytes,
                                std::string_view what) {
  return internal::ReadBoundedFile(path, max_bytes, what);
}

}  // namespace codeact::cli
