// UTF-8 repair: child output is bytes; the result contract carries text.
#pragma once

#include <string>
#include <string_view>

namespace codeact::internal {

// Replaces every invalid or truncated sequence with U+FFFD. Valid input is returned unchanged.
std::string SanitizeUtf8(std::string_view bytes);

}  // namespace codeact::internal
