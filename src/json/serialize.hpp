// JSON text for a Boost.JSON value, with numbers as a reader expects them: Boost 1.81 prints
// 13.0 as "1.3E1"; this prints the shortest round-trip form ("13.0", "0.1", "1e+20").
#pragma once

#include <boost/json.hpp>

#include <string>

namespace codeact::internal {

std::string SerializeJson(const boost::json::value& value);
std::string SerializeJson(const boost::json::object& object);
void AppendJson(std::string& out, const boost::json::value& value);
void AppendJson(std::string& out, const boost::json::object& object);

}  // namespace codeact::internal
