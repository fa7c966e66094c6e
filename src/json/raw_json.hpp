// Raw text of parts of a JSON document that a parser has already accepted. Boost.JSON turns an
// integer beyond 64 bits into a double, so a value that must come back byte for byte (a JSON-RPC
// request id) is taken from the document's own text instead. The input must be valid JSON: these
// functions skip, they do not validate.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace codeact::internal {

// The text of the value of `key` in the object `object_text` (the last one when the key repeats,
// as the parser keeps the last); nothing when it is not an object or has no such key.
std::optional<std::string_view> RawMember(std::string_view object_text, std::string_view key);

// The texts of the elements of the array `array_text`; empty when it is not an array.
std::vector<std::string_view> RawArrayElements(std::string_view array_text);

}  // namespace codeact::internal
