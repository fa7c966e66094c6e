#include "common/utf8.hpp"

#include <cstdint>
#include <cstdio>

namespace codeact::internal {
namespace {

// Length of the valid sequence starting at s[i], or 0 if invalid (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF).
std::size_t ValidSequenceLength(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<std::uint8_t>(s[i + k]); };
  const std::size_t left = s.size() - i;
  const std::uint8_t c = b(0);
  if (c < 0x80) return 1;
  const auto cont = [&](std::size_t k) { return k < left && (b(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;
    if (c == 0xED && b(1) >= 0xA0) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;
    if (c == 0xF4 && b(1) >= 0x90) return 0;
    return 4;
  }
  return 0;
}

}  // namespace

std::string SanitizeUtf8(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    const std::size_t n = ValidSequenceLength(bytes, i);
    if (n == 0) break;
    i += n;
  }
  if (i == bytes.size()) return std::string(bytes);
  std::string out(bytes.substr(0, i));
  while (i < bytes.size()) {
    const std::size_t n = ValidSequenceLength(bytes, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::optional<std::size_t> FirstInvalidUtf8(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    const std::size_t n = ValidSequenceLength(bytes, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

Violation SourceEncodingViolation(std::string_view source, std::size_t offset,
                                  const std::string& what, std::string hint) {
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X",
                offset < source.size() ? static_cast<unsigned char>(source[offset]) : 0u);
  const int col = static_cast<int>(offset - line_start);
  return {line, col, "source-encoding",
          std::string("byte ") + byte + " at offset " + std::to_string(offset) + " (line " +
              std::to_string(line) + ", column " + std::to_string(col) + ") " + what,
          std::move(hint)};
}

std::optional<Violation> Utf8Violation(std::string_view code, std::string hint) {
  const std::optional<std::size_t> bad = FirstInvalidUtf8(code);
  if (!bad) return std::nullopt;
  if (hint.empty()) hint = "send the code as UTF-8 text";
  return SourceEncodingViolation(code, *bad, "is not valid UTF-8", std::move(hint));
}

}  // namespace codeact::internal
