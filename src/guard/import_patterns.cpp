#include "guard/import_patterns.hpp"

#include <algorithm>
#include <cctype>

namespace codeact::internal {
namespace {

bool Below(std::string_view name, std::string_view prefix) {
  return name == prefix || (name.size() > prefix.size() &&
                            name.substr(0, prefix.size()) == prefix && name[prefix.size()] == '.');
}

bool MentionsSubprocess(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower.find("subprocess") != std::string::npos;
}

}  // namespace

ImportPatterns::ImportPatterns(const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (p.size() > 1 && p[0] == '!') {
      prefixes_.push_back({p.substr(1), false});
    } else if (p.size() > 2 && p.compare(p.size() - 2, 2, ".*") == 0) {
      prefixes_.push_back({p.substr(0, p.size() - 2), true});
    } else if (!p.empty()) {
      exact_.insert(p);
    }
  }
}

const ImportPatterns::Prefix* ImportPatterns::Longest(std::string_view name) const {
  const Prefix* best = nullptr;
  for (const auto& p : prefixes_) {
    if (!Below(name, p.name)) continue;
    // On equal length the wildcard wins, as in the validator.
    if (best == nullptr || p.name.size() > best->name.size() ||
        (p.name.size() == best->name.size() && p.allows)) {
      best = &p;
    }
  }
  return best;
}

bool ImportPatterns::Refuses(std::string_view name) const {
  if (name.empty() || MentionsSubprocess(name)) return true;
  const Prefix* best = Longest(name);
  return best != nullptr && !best->allows;
}

bool ImportPatterns::Allows(std::string_view name) const {
  if (name.empty() || MentionsSubprocess(name)) return false;
  if (exact_.count(std::string(name)) != 0) return true;
  const Prefix* best = Longest(name);
  if (best == nullptr || !best->allows) return false;
  // Below a wildcard, no part may be private.
  std::string_view below =
      name.size() > best->name.size() ? name.substr(best->name.size() + 1) : std::string_view{};
  for (std::size_t at = 0; at < below.size();) {
    if (below[at] == '_') return false;
    const std::size_t dot = below.find('.', at);
    if (dot == std::string_view::npos) break;
    at = dot + 1;
  }
  return true;
}

}  // namespace codeact::internal
