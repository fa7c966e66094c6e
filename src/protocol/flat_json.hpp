// Flat JSON for the processes that link no JSON library: the sandbox launcher's setup_error frame
// and the zygote's side of the fork server (the guard module carries nothing but libc). A flat
// object is one JSON object whose values are strings or integers; it is read strictly and its
// strings are written as ASCII.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace codeact::internal {

struct FlatJsonField {
  std::string name;
  std::variant<std::string, std::int64_t> value;  // a string as UTF-8 bytes
};

// The fields of `text` in their order: one object of string and int64 values, nothing but
// whitespace around it, no name twice, no other kind of value (no float, literal, array or
// object). nullopt with `error` saying what is wrong.
std::optional<std::vector<FlatJsonField>> ParseFlatJsonObject(std::string_view text,
                                                              std::string& error);

// `s` as a JSON string literal in ASCII: quote, backslash and every byte outside printable
// ASCII escaped (a byte >= 0x80 as \u00XX: arbitrary bytes, e.g. of a path, stay valid JSON).
std::string JsonStringLiteral(std::string_view s);

}  // namespace codeact::internal
