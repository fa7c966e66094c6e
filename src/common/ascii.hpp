// ASCII case folding for protocol text (URL schemes, host names, HTTP header and media-type
// names): byte by byte, whatever the process's locale.
#pragma once

#include <string>
#include <string_view>

namespace codeact::internal {

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace codeact::internal
