// JSON text for a Boost.JSON value, with numbers as a reader expects them: Boost 1.81 prints
// 13.0 as "1.3E1"; this prints the shortest round-trip form ("13.0", "0.1", "1e+20").
#pragma once

#include <boost/json.hpp>
#include <cstddef>
#include <string>
#include <string_view>

namespace codeact::internal {

// How deep the host lets JSON from untrusted sources nest (requests, tool arguments and results,
// bridge frames). Boost's default of 32 would reject odd but valid arguments; a bound keeps the
// recursion of serialising and destroying values shallow.
inline constexpr std::size_t kMaxJsonDepth = 128;

// json::parse with kMaxJsonDepth; never throws (a failure is `ec`).
boost::json::value ParseJson(std::string_view text, boost::json::error_code& ec);
// What went wrong, for a message: "nested deeper than 128 levels" for too_deep, else Boost's text.
std::string JsonErrorText(const boost::json::error_code& ec);

std::string SerializeJson(const boost::json::value& value);
std::string SerializeJson(const boost::json::object& object);
void AppendJson(std::string& out, const boost::json::value& value);
void AppendJson(std::string& out, const boost::json::object& object);

}  // namespace codeact::internal
