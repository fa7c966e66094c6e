#include "json/raw_json.hpp"

#include <boost/json.hpp>
#include <string>

namespace codeact::internal {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t SkipSpace(std::string_view s, std::size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// The end of the string token starting at s[i] == '"' (one past its closing quote).
std::size_t SkipString(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

// The end of the value starting at s[i].
std::size_t SkipValue(std::string_view s, std::size_t i) {
  if (i >= s.size()) return i;
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = SkipString(s, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return i;
  }
  while (i < s.size() && s[i] != ',' && s[i] != ']' && s[i] != '}' && !IsSpace(s[i])) ++i;
  return i;
}

// Whether the string token `token` (quotes included) spells `key`.
bool KeyEquals(std::string_view token, std::string_view key) {
  const std::string_view inner = token.substr(1, token.size() >= 2 ? token.size() - 2 : 0);
  if (inner.find('\\') == std::string_view::npos) return inner == key;
  boost::json::error_code ec;
  const boost::json::value v = boost::json::parse(token, ec);
  return !ec && v.is_string() && v.as_string() == key;
}

}  // namespace

std::optional<std::string_view> RawMember(std::string_view s, std::string_view key) {
  std::size_t i = SkipSpace(s, 0);
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  std::optional<std::string_view> found;
  i = SkipSpace(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    const std::size_t key_end = SkipString(s, i);
    const std::string_view token = s.substr(i, key_end - i);
    i = SkipSpace(s, key_end);
    if (i >= s.size() || s[i] != ':') return std::nullopt;
    i = SkipSpace(s, i + 1);
    const std::size_t value_end = SkipValue(s, i);
    if (KeyEquals(token, key)) found = s.substr(i, value_end - i);
    i = SkipSpace(s, value_end);
    if (i < s.size() && s[i] == ',') i = SkipSpace(s, i + 1);
  }
  return found;
}

std::vector<std::string_view> RawArrayElements(std::string_view s) {
  std::vector<std::string_view> elements;
  std::size_t i = SkipSpace(s, 0);
  if (i >= s.size() || s[i] != '[') return elements;
  i = SkipSpace(s, i + 1);
  while (i < s.size() && s[i] != ']') {
    const std::size_t end = SkipValue(s, i);
    if (end == i) break;  // not valid JSON after all: stop rather than loop
    elements.push_back(s.substr(i, end - i));
    i = SkipSpace(s, end);
    if (i < s.size() && s[i] == ',') i = SkipSpace(s, i + 1);
  }
  return elements;
}

}  // namespace codeact::internal
