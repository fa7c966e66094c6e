// Integers beyond int64 in JSON text. Tool arguments and results must keep their integers exact
// on both backends, and Boost.JSON (like the Hyperlight SDK's serde_json) reads a larger integer
// literal as an unsigned or a double: that must be refused by the text, before it is parsed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace codeact::internal {

// The first integer literal (outside strings) of `json_text` that does not fit in a signed
// 64-bit integer, as written (cut to 40 characters); nullopt when there is none. Linear; never
// fails on malformed text (it reads what looks like numbers).
std::optional<std::string> FirstIntegerBeyondInt64(std::string_view json_text);

}  // namespace codeact::internal
