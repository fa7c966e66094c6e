// EnumNames: one constexpr table of an enum's {value, name} rows, read both ways (Name and
// Parse), with a compile-time check that it names every value of the enum exactly once.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace codeact::internal {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

template <typename E, std::size_t N>
struct EnumNames {
  std::string_view fallback;  // the name of a value without a row (cast from an int out of range)
  std::array<EnumName<E>, N> rows;

  constexpr std::string_view Name(E value) const {
    for (const EnumName<E>& row : rows) {
      if (row.value == value) return row.name;
    }
    return fallback;
  }

  constexpr std::optional<E> Parse(std::string_view name) const {
    for (const EnumName<E>& row : rows) {
      if (row.name == name) return row.value;
    }
    return std::nullopt;
  }
};

// The table of `rows`, written as one brace list:
// MakeEnumNames<Outcome>("internal_error", {{Outcome::kOk, "ok"}, ...}).
template <typename E, std::size_t N>
consteval EnumNames<E, N> MakeEnumNames(std::string_view fallback, const EnumName<E> (&rows)[N]) {
  EnumNames<E, N> table{fallback, {}};
  for (std::size_t i = 0; i < N; ++i) table.rows[i] = rows[i];
  return table;
}

// Whether V is one of its enum's enumerators: GCC and Clang print a named value as
// "V = ns::E::kName" and any other as "V = (ns::E)7".
template <auto V>
consteval bool IsEnumerator() {
  const std::string_view signature = __PRETTY_FUNCTION__;
  const std::size_t equals = signature.rfind("V = ");
  return equals != std::string_view::npos && signature[equals + 4] != '(';
}

// The check that kTable names each value of its enum once, as -Wswitch did for a switch: the
// rows' values, sorted, run from the lowest to the highest in steps of one, and the values just
// outside that range are no enumerators (so a value added at either end without a row fails the
// build too).
template <const auto& kTable>
consteval bool NamesEachValueOnce() {
  using E = decltype(kTable.rows[0].value);
  using U = std::underlying_type_t<E>;
  constexpr auto kSorted = [] {
    std::array<U, kTable.rows.size()> values{};
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<U>(kTable.rows[i].value);
    std::sort(values.begin(), values.end());
    return values;
  }();
  for (std::size_t i = 1; i < kSorted.size(); ++i) {
    if (kSorted[i] != kSorted[i - 1] + 1) return false;
  }
  return !IsEnumerator<static_cast<E>(kSorted.front() - 1)>() &&
         !IsEnumerator<static_cast<E>(kSorted.back() + 1)>();
}

}  // namespace codeact::internal
