#include "json/serialize.hpp"

#include <charconv>

namespace codeact::internal {
namespace json = boost::json;

json::value ParseJson(std::string_view text, json::error_code& ec) {
  json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  try {
    return json::parse(text, ec, {}, options);
  } catch (const std::exception&) {  // allocation failure
    ec = json::make_error_code(json::error::syntax);
    return nullptr;
  }
}

std::string JsonErrorText(const json::error_code& ec) {
  if (ec == json::error::too_deep)
    return "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  return ec.message();
}

void AppendJson(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      out += "null";
      return;
    case json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      return;
    case json::kind::int64:
      out += std::to_string(v.get_int64());
      return;
    case json::kind::uint64:
      out += std::to_string(v.get_uint64());
      return;
    case json::kind::double_: {
      char buf[64];
      const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get_double());
      std::string_view text(buf, ec == std::errc() ? static_cast<std::size_t>(end - buf) : 0);
      if (text.empty() || text == "inf" || text == "-inf" || text == "nan" || text == "-nan") {
        out += "null";  // not representable in JSON
        return;
      }
      out += text;
      if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
      return;
    }
    case json::kind::string:
      out += json::serialize(v.get_string());
      return;
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v.get_array()) {
        if (!first) out += ',';
        first = false;
        AppendJson(out, item);
      }
      out += ']';
      return;
    }
    case json::kind::object:
      AppendJson(out, v.get_object());
      return;
  }
}

void AppendJson(std::string& out, const json::object& o) {
  out += '{';
  bool first = true;
  for (const auto& [key, item] : o) {
    if (!first) out += ',';
    first = false;
    out += json::serialize(json::string_view(key));
    out += ':';
    AppendJson(out, item);
  }
  out += '}';
}

std::string SerializeJson(const json::object& o) {
  std::string out;
  AppendJson(out, o);
  return out;
}

std::string SerializeJson(const json::value& value) {
  std::string out;
  AppendJson(out, value);
  return out;
}

}  // namespace codeact::internal
