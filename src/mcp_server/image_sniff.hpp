// SniffImageMediaType: whether a captured file is an image an MCP client can show, judged by its
// bytes alone (the name's extension is the code's to choose, and says nothing): PNG, JPEG, GIF,
// WebP by their signatures, SVG as UTF-8 text whose first element is <svg> (after an XML
// declaration, comments, a doctype and whitespace).
#pragma once

#include <optional>
#include <string_view>

namespace codeact::internal {

// "image/png", "image/jpeg", "image/gif", "image/webp" or "image/svg+xml"; nothing otherwise.
std::optional<std::string_view> SniffImageMediaType(std::string_view bytes);

}  // namespace codeact::internal
