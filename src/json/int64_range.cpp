#include "json/int64_range.hpp"

namespace codeact::internal {
namespace {

constexpr std::string_view kInt64Max = "9223372036854775807";
constexpr std::string_view kInt64MinMagnitude = "9223372036854775808";
constexpr std::size_t kShownChars = 40;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Whether the digits (no sign, no leading zeros unless "0") exceed the bound, both decimal.
bool Exceeds(std::string_view digits, std::string_view bound) {
  if (digits.size() != bound.size()) return digits.size() > bound.size();
  return digits > bound;
}

}  // namespace

std::optional<std::string> FirstIntegerBeyondInt64(std::string_view text) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c != '-' && !IsDigit(c)) continue;
    const std::size_t start = i;
    bool integer = true;
    while (i < text.size() && (IsDigit(text[i]) || text[i] == '-' || text[i] == '+' ||
                               text[i] == '.' || text[i] == 'e' || text[i] == 'E')) {
      if (text[i] == '.' || text[i] == 'e' || text[i] == 'E') integer = false;
      ++i;
    }
    std::string_view token = text.substr(start, i - start);
    --i;  // the loop's ++i moves past the token
    if (!integer) continue;
    const bool negative = token.front() == '-';
    std::string_view digits = negative ? token.substr(1) : token;
    while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
      continue;
    if (Exceeds(digits, negative ? kInt64MinMagnitude : kInt64Max)) {
      std::string shown(token.substr(0, kShownChars));
      if (token.size() > kShownChars) shown += "...";
      return shown;
    }
  }
  return std::nullopt;
}

}  // namespace codeact::internal
