// Standard base64 (RFC 4648, with padding) for captured file bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace codeact::internal {

std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace codeact::internal
