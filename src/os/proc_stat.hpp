// ProcStatField: one field of a /proc/<pid>/stat line, numbered as proc(5) numbers them (1 the
// pid, 2 the command). The command may itself hold spaces and parentheses, so the fields from 3 on
// are counted after its last ')'. Header-only: the guard module (no codeact library) uses it too.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace codeact::internal {

// Field `field` (>= 3) of `stat`, or nullopt when the line has no such field.
inline std::optional<std::string_view> ProcStatField(std::string_view stat, int field) {
  const std::size_t close = stat.rfind(')');
  if (field < 3 || close == std::string_view::npos) return std::nullopt;
  std::size_t at = close + 1;
  for (int f = 3;; ++f) {
    if (at >= stat.size() || stat[at] != ' ') return std::nullopt;
    ++at;
    const std::size_t end = std::min(stat.find_first_of(" \n", at), stat.size());
    if (f == field) return stat.substr(at, end - at);
    at = end;
  }
}

// The same field as an unsigned number.
inline std::optional<std::uint64_t> ProcStatNumber(std::string_view stat, int field) {
  const std::optional<std::string_view> text = ProcStatField(stat, field);
  std::uint64_t value = 0;
  if (!text || text->empty() ||
      std::from_chars(text->data(), text->data() + text->size(), value).ptr !=
          text->data() + text->size())
    return std::nullopt;
  return value;
}

}  // namespace codeact::internal
