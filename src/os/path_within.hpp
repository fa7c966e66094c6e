// PathWithin: lexical path containment of two canonical paths. Header-only.
#pragma once

#include <string_view>

namespace codeact::internal {

// Whether `path` is `dir` or lies beneath it, compared by components of the text alone: both are
// absolute and normalized (no ".", "..", repeated or trailing '/' other than the root itself), as
// canonical paths are. An empty `dir` holds nothing.
inline bool PathWithin(std::string_view path, std::string_view dir) {
  if (dir.empty() || !path.starts_with(dir)) return false;
  return path.size() == dir.size() || dir.back() == '/' || path[dir.size()] == '/';
}

}  // namespace codeact::internal
