// UTF-8 repair: child output is bytes; the result contract carries text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/validator.hpp"

namespace codeact::internal {

// Replaces every invalid or truncated sequence with U+FFFD. Valid input is returned unchanged.
std::string SanitizeUtf8(std::string_view bytes);

// The offset of the first byte that does not start a valid UTF-8 sequence, if any.
std::optional<std::size_t> FirstInvalidUtf8(std::string_view bytes);

// For source code that must be UTF-8 text: nothing when it is, else a "source-encoding"
// violation naming the first bad byte, its offset, line and column (a byte column, as `ast`
// counts them). `hint` replaces the default hint.
std::optional<Violation> Utf8Violation(std::string_view code, std::string hint = "");

// The "source-encoding" violation for a bad byte at `offset` of `source`, with `what` saying
// why it is bad ("is not valid UTF-8", "cannot be decoded as latin-1").
Violation SourceEncodingViolation(std::string_view source, std::size_t offset,
                                  const std::string& what, std::string hint);

}  // namespace codeact::internal
