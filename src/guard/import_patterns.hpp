// ImportPatterns: which modules the user's code may import, as the runtime guard checks it. The
// patterns come from the host (validator/runtime_policy.py computes them from the policy, which
// documents their meaning): "name" allows exactly that module, "pkg.*" a package and its public
// submodules, "!name" denies a module and everything below it; the longest matching prefix
// decides, and a name containing "subprocess" is never allowed. A name that is not allowed is
// refused (Refuses: a "!" pattern or "subprocess" decided) or merely not available (no pattern
// matched: the guard then raises ModuleNotFoundError, so that a fallback under
// `except ImportError` runs).
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace codeact::internal {

class ImportPatterns {
 public:
  ImportPatterns() = default;
  explicit ImportPatterns(const std::vector<std::string>& patterns);

  bool Allows(std::string_view dotted_name) const;
  // Whether a name that is not allowed is refused by the policy rather than unavailable.
  bool Refuses(std::string_view dotted_name) const;

 private:
  struct Prefix {
    std::string name;
    bool allows = false;  // "pkg.*" (true) or "!name" (false)
  };
  std::unordered_set<std::string> exact_;
  std::vector<Prefix> prefixes_;

  const Prefix* Longest(std::string_view name) const;
};

}  // namespace codeact::internal
