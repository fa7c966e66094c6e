#include "validation/source_decoding.hpp"

#include <cctype>

#include "common/utf8.hpp"

namespace codeact::internal {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr const char* kHint =
    "save the file as UTF-8, or declare its encoding on the first or second line (PEP 263), "
    "e.g. \"# -*- coding: latin-1 -*-\"";

// get_normal_name() of CPython's tokenizer.
std::string NormalName(const std::string& name) {
  std::string buf;
  for (std::size_t i = 0; i < name.size() && i < 12; ++i) {
    const char c = name[i];
    buf += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (buf == "utf-8" || buf.starts_with("utf-8-")) return "utf-8";
  if (buf == "latin-1" || buf == "iso-8859-1" || buf == "iso-latin-1" ||
      buf.starts_with("latin-1-") || buf.starts_with("iso-8859-1-") ||
      buf.starts_with("iso-latin-1-")) {
    return "iso-8859-1";
  }
  return name;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\f'; }

// get_coding_spec(): a cookie only in a comment that is alone on its line.
std::optional<std::string> CookieOfLine(std::string_view line) {
  std::size_t hash = 0;
  while (hash < line.size() && IsBlank(line[hash])) ++hash;
  if (hash >= line.size() || line[hash] != '#') return std::nullopt;
  for (std::size_t i = hash; i + 6 <= line.size(); ++i) {
    if (line.substr(i, 6) != "coding") continue;
    std::size_t t = i + 6;
    if (t >= line.size() || (line[t] != ':' && line[t] != '=')) continue;
    do {
      ++t;
    } while (t < line.size() && (line[t] == ' ' || line[t] == '\t'));
    const std::size_t begin = t;
    while (t < line.size() && (std::isalnum(static_cast<unsigned char>(line[t])) ||
                               line[t] == '-' || line[t] == '_' || line[t] == '.')) {
      ++t;
    }
    if (t > begin) return NormalName(std::string(line.substr(begin, t - begin)));
  }
  return std::nullopt;
}

// A line of nothing but blanks and perhaps a comment: the cookie may then be on the next one.
bool OnlyCommentOrBlank(std::string_view line) {
  for (char c : line) {
    if (c == '#' || c == '\n' || c == '\r') return true;
    if (!IsBlank(c)) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> CodingCookie(std::string_view source) {
  const std::size_t nl = source.find('\n');
  const std::string_view first = source.substr(0, nl);
  if (auto cookie = CookieOfLine(first)) return cookie;
  if (nl == std::string_view::npos || !OnlyCommentOrBlank(first)) return std::nullopt;
  const std::string_view rest = source.substr(nl + 1);
  return CookieOfLine(rest.substr(0, rest.find('\n')));
}

DecodedSource DecodeSourceFile(std::string_view bytes) {
  DecodedSource out;
  const bool bom = bytes.starts_with(kBom);
  const std::string_view body = bom ? bytes.substr(kBom.size()) : bytes;
  const std::optional<std::string> cookie = CodingCookie(body);
  if (!cookie || *cookie == "utf-8") {
    if (auto bad = FirstInvalidUtf8(bytes)) {
      out.problem =
          SourceEncodingViolation(bytes, *bad,
                                  cookie ? "is not valid UTF-8 (the declared encoding)"
                                         : "is not valid UTF-8, and no encoding is declared",
                                  kHint);
      return out;
    }
    out.text = std::string(body);
    return out;
  }
  if (bom) {
    out.problem = Violation{
        1, 0, "source-encoding",
        "encoding problem: the file starts with a UTF-8 byte-order mark but declares " + *cookie,
        "drop the byte-order mark or the coding declaration"};
    return out;
  }
  auto decoded = DecodeWithPythonCodec(body, *cookie);
  if (auto* text = std::get_if<std::string>(&decoded)) {
    out.text = std::move(*text);
    return out;
  }
  const CodecFailure& failure = std::get<CodecFailure>(decoded);
  if (failure.unknown_codec) {
    out.problem =
        Violation{1, 0, "source-encoding",
                  "unknown encoding: " + *cookie + " (the file's coding declaration)", kHint};
  } else {
    out.problem = SourceEncodingViolation(
        body, failure.offset, "cannot be decoded as " + *cookie + ": " + failure.reason, kHint);
  }
  return out;
}

}  // namespace codeact::internal
