// EnumNames: one constexpr table of an enum's {value, name} rows, read both ways (Name and
// Parse). MakeEnumNames checks at compile time that the rows name every enumerator exactly once,
// so an enum value added without a name fails the build, as -Wswitch did for a switch.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

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

// The enumerators are found among the values 0 to kEnumProbeEnd - 1; an enum with a value
// outside them cannot have a table (MakeEnumNames fails to compile).
inline constexpr int kEnumProbeEnd = 64;

// Whether V is one of its enum's enumerators: GCC and Clang print a named value as
// "V = ns::E::kName" and any other as "V = (ns::E)7".
template <auto V>
consteval bool IsEnumerator() {
  const std::string_view signature = __PRETTY_FUNCTION__;
  const std::size_t equals = signature.rfind("V = ");
  return equals != std::string_view::npos && signature[equals + 4] != '(';
}

template <typename E, int... kValues>
consteval std::array<bool, sizeof...(kValues)> Enumerators(std::integer_sequence<int, kValues...>) {
  return {IsEnumerator<static_cast<E>(kValues)>()...};
}

// Whether `rows` name each enumerator of E once and nothing else.
template <typename E, std::size_t N>
consteval bool NamesEachEnumeratorOnce(const EnumName<E> (&rows)[N]) {
  constexpr auto kIsEnumerator = Enumerators<E>(std::make_integer_sequence<int, kEnumProbeEnd>());
  std::array<int, kEnumProbeEnd> rows_of{};
  for (const EnumName<E>& row : rows) {
    const int v = static_cast<int>(row.value);
    if (v < 0 || v >= kEnumProbeEnd || !kIsEnumerator[v] || rows_of[v]++ > 0) return false;
  }
  for (int v = 0; v < kEnumProbeEnd; ++v) {
    if (kIsEnumerator[v] && rows_of[v] == 0) return false;
  }
  return true;
}

// Called only where a table is incomplete, so that its name is the compiler's error.
inline void AnEnumeratorHasNoRowOrTwo() {}

// The table of `rows`, written as one brace list:
// MakeEnumNames<Outcome>("internal_error", {{Outcome::kOk, "ok"}, ...}).
template <typename E, std::size_t N>
consteval EnumNames<E, N> MakeEnumNames(std::string_view fallback, const EnumName<E> (&rows)[N]) {
  if (!NamesEachEnumeratorOnce(rows)) AnEnumeratorHasNoRowOrTwo();
  EnumNames<E, N> table{fallback, {}};
  for (std::size_t i = 0; i < N; ++i) table.rows[i] = rows[i];
  return table;
}

}  // namespace codeact::internal
