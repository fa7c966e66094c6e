// Boost.JSON adapter for the public types (json.hpp). Exceptions from Boost stop here.
#include "codeact/json.hpp"

#include <boost/json.hpp>

#include "common/utf8.hpp"
#include "json/base64.hpp"
#include "json/policy_json.hpp"
#include "json/result_fields.hpp"
#include "json/result_json.hpp"
#include "json/result_size.hpp"
#include "json/serialize.hpp"

namespace codeact {
namespace json = boost::json;
namespace {

using internal::JsonText;

json::string Text(std::string_view s) { return JsonText(s); }

json::array ViolationsToJson(const std::vector<Violation>& violations) {
  json::array out;
  for (const auto& v : violations) out.push_back(internal::ViolationJson(v));
  return out;
}

json::array Strings(const std::vector<std::string>& list) {
  json::array out;
  for (const auto& s : list) out.emplace_back(Text(s));
  return out;
}

StatusOr<std::vector<std::string>> StringList(const json::value& v, std::string_view key) {
  if (!v.is_array())
    return InvalidArgument("policy key \"" + std::string(key) + "\" must be a list of strings");
  std::vector<std::string> out;
  for (const auto& item : v.as_array()) {
    if (!item.is_string()) {
      return InvalidArgument("policy key \"" + std::string(key) + "\" must be a list of strings");
    }
    out.emplace_back(item.as_string());
  }
  return out;
}

}  // namespace

std::string ToJson(const ValidationReport& report) {
  return internal::SerializeJson(
      json::object{{"ok", report.ok}, {"violations", ViolationsToJson(report.violations)}});
}

std::string ToJson(const ExecutionResult& r) {
  return internal::SerializeJson(internal::ResultToJsonObject(r));
}

namespace internal {

std::size_t JsonTextBytes(std::string_view text) {
  return SerializeJson(json::value(Text(text))).size();
}

std::size_t JsonTextBytesUpperBound(std::size_t text_bytes) { return 6 * text_bytes + 2; }

std::size_t Base64Bytes(std::size_t data_bytes) { return (data_bytes + 2) / 3 * 4; }

std::size_t CapturedFileJsonBytes(std::string_view path, std::string_view media_type,
                                  std::int64_t size, std::size_t data_bytes) {
  return SerializeJson(internal::CapturedFileJson(path, media_type, size, "")).size() +
         Base64Bytes(data_bytes);
}

std::size_t CapturedFileJsonBytes(const CapturedFile& f) {
  return CapturedFileJsonBytes(f.path, f.media_type, f.size, f.data.size());
}

std::size_t OmittedFileJsonBytes(const OmittedFile& f) {
  return SerializeJson(internal::OmittedFileJson(f)).size();
}

std::size_t OutputJsonBytes(const ExecutionResult& r) {
  return SerializeJson(internal::OutputValue(r)).size();
}

std::size_t ViolationJsonBytes(const Violation& v) {
  return SerializeJson(internal::ViolationJson(v)).size();
}

}  // namespace internal

StatusOr<ExecutionResult> ExecutionResultFromJson(std::string_view text) {
  try {
    const json::value v = json::parse(text);
    return internal::ResultFromJsonObject(v.as_object());
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("not an execution result: ") + e.what());
  }
}

StatusOr<ValidationPolicy> PolicyFromJson(std::string_view text) {
  json::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec) return InvalidArgument("policy is not valid JSON: " + ec.message());
  if (!v.is_object()) return InvalidArgument("policy must be a JSON object");
  ValidationPolicy policy;
  for (const auto& [key, value] : v.as_object()) {
    auto list = [&](std::string_view k) { return StringList(value, k); };
    auto integer = [&](std::int64_t& out) -> Status {
      if (!value.is_int64() && !value.is_uint64()) {
        return InvalidArgument("policy key \"" + std::string(key) + "\" must be an integer");
      }
      out = value.to_number<std::int64_t>();
      if (out <= 0)
        return InvalidArgument("policy key \"" + std::string(key) + "\" must be positive");
      return Status::Ok();
    };
    if (key == "allowed_imports" || key == "blocked_builtins" ||
        key == "allowed_dunder_attributes" || key == "extra_allowed_imports" ||
        key == "extra_blocked_imports" || key == "blocked_imports" || key == "allowed_builtins") {
      auto l = list(key);
      if (!l.ok()) return l.status();
      if (key == "allowed_imports") policy.allowed_imports = std::move(*l);
      if (key == "blocked_imports") policy.blocked_imports = std::move(*l);
      if (key == "allowed_builtins") policy.allowed_builtins = std::move(*l);
      if (key == "blocked_builtins") policy.blocked_builtins = std::move(*l);
      if (key == "allowed_dunder_attributes") policy.allowed_dunder_attributes = std::move(*l);
      if (key == "extra_allowed_imports") policy.extra_allowed_imports = std::move(*l);
      if (key == "extra_blocked_imports") policy.extra_blocked_imports = std::move(*l);
    } else if (key == "allow_dynamic_format") {
      if (!value.is_bool())
        return InvalidArgument("policy key \"allow_dynamic_format\" must be true or false");
      policy.allow_dynamic_format = value.as_bool();
    } else if (key == "max_code_bytes") {
      if (Status s = integer(policy.max_code_bytes); !s.ok()) return s;
    } else if (key == "validation_timeout_ms") {
      if (Status s = integer(policy.validation_timeout_ms); !s.ok()) return s;
    } else if (key == "max_ast_depth") {
      std::int64_t depth = 0;
      if (Status s = integer(depth); !s.ok()) return s;
      policy.max_ast_depth = static_cast<std::int32_t>(std::min<std::int64_t>(depth, 10'000));
    } else {
      return InvalidArgument("unknown policy key \"" + std::string(key) + "\"");
    }
  }
  return policy;
}

namespace {
// The policy file's keys (PolicyFromJson reads them back).
json::object PolicyFileObject(const ValidationPolicy& p) {
  json::object o;
  if (p.allowed_imports) o["allowed_imports"] = Strings(*p.allowed_imports);
  if (p.blocked_builtins) o["blocked_builtins"] = Strings(*p.blocked_builtins);
  if (p.blocked_imports) o["blocked_imports"] = Strings(*p.blocked_imports);
  if (p.allowed_builtins) o["allowed_builtins"] = Strings(*p.allowed_builtins);
  if (p.allowed_dunder_attributes)
    o["allowed_dunder_attributes"] = Strings(*p.allowed_dunder_attributes);
  o["extra_allowed_imports"] = Strings(p.extra_allowed_imports);
  o["extra_blocked_imports"] = Strings(p.extra_blocked_imports);
  o["allow_dynamic_format"] = p.allow_dynamic_format;
  o["max_code_bytes"] = p.max_code_bytes;
  o["max_ast_depth"] = p.max_ast_depth;
  o["validation_timeout_ms"] = p.validation_timeout_ms;
  return o;
}
}  // namespace

std::string ToJson(const ValidationPolicy& p) {
  return internal::SerializeJson(PolicyFileObject(p));
}

json::object internal::PolicyForValidator(const ValidationPolicy& p) {
  json::object o = PolicyFileObject(p);
  if (!p.network_tools.empty()) o["network_tools"] = Strings(p.network_tools);
  o["tool_names"] = Strings(p.tool_names);
  return o;
}

}  // namespace codeact
