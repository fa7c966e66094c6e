// Source files as CPython reads them (PEP 263): a UTF-8 byte-order mark is dropped, a coding
// cookie on the first or second line names the codec (only on the second when the first holds
// nothing but a comment or blanks), and without one the bytes must be UTF-8. The result is
// UTF-8 text, which the validator and the child then compile as a str (where a cookie no longer
// applies). Code that arrives as text (JSON, the C++ API) is never decoded again: only files and
// standard input are bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "codeact/validator.hpp"

namespace codeact::internal {

// The codec the cookie names, normalised as CPython's tokenizer does ("utf-8" for utf_8, UTF-8-
// and the like, "iso-8859-1" for latin-1 and its aliases, otherwise as written); nothing when
// the first two lines hold no cookie.
std::optional<std::string> CodingCookie(std::string_view source);

struct DecodedSource {
  std::string text;                  // UTF-8, without a byte-order mark
  std::optional<Violation> problem;  // set: nothing could be decoded; a "source-encoding" violation
};

// Needs the embedded interpreter (Validator::Embedded) only for a cookie naming a codec other
// than UTF-8.
DecodedSource DecodeSourceFile(std::string_view bytes);

// The codec step, done by the embedded interpreter (embedded_python.cpp): the text, or why
// not — an unknown codec, or the offset of the first byte the codec refused.
struct CodecFailure {
  bool unknown_codec = false;
  std::size_t offset = 0;
  std::string reason;
};
std::variant<std::string, CodecFailure> DecodeWithPythonCodec(std::string_view bytes,
                                                              const std::string& codec);

}  // namespace codeact::internal
