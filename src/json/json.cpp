// Boost.JSON adapter for the public types (json.hpp). Exceptions from Boost stop here.
#include "codeact/json.hpp"

#include <boost/json.hpp>

#include "common/utf8.hpp"
#include "json/base64.hpp"
#include "json/policy_json.hpp"
#include "json/result_json.hpp"
#include "json/result_size.hpp"
#include "json/serialize.hpp"

namespace codeact {
namespace json = boost::json;
namespace {

json::string Text(std::string_view s) { return json::string(internal::SanitizeUtf8(s)); }

json::object ViolationToJson(const Violation& v) {
  return json::object{{"line", v.line},
                      {"col", v.col},
                      {"rule", Text(v.rule)},
                      {"message", Text(v.message)},
                      {"hint", Text(v.hint)}};
}

json::array ViolationsToJson(const std::vector<Violation>& violations) {
  json::array out;
  for (const auto& v : violations) out.push_back(ViolationToJson(v));
  return out;
}

json::object FileToJson(std::string_view path, std::string_view media_type, std::int64_t size,
                        std::string data_base64) {
  return json::object{{"path", Text(path)},
                      {"media_type", media_type},
                      {"size", size},
                      {"data_base64", std::move(data_base64)}};
}

json::object OmittedToJson(const OmittedFile& f) {
  return json::object{{"path", Text(f.path)}, {"reason", Text(f.reason)}};
}

// The final value as the result carries it: the child's JSON text re-serialised, null when it
// does not parse.
json::value OutputValue(const ExecutionResult& r) {
  if (!r.output_present) return nullptr;
  json::error_code ec;
  json::value output = json::parse(r.output_json, ec);
  if (ec) return nullptr;
  return output;
}

// Bytes of a JSON array whose elements take `element_bytes` in total, without its brackets.
std::size_t ArrayBodyBytes(std::size_t count, std::size_t element_bytes) {
  return element_bytes + (count > 0 ? count - 1 : 0);
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

json::value Optional(const std::optional<std::int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

std::optional<std::int64_t> OptionalNumber(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  return v->to_number<std::int64_t>();
}

Outcome OutcomeFromName(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(Outcome::kInternalError); ++k) {
    if (OutcomeName(static_cast<Outcome>(k)) == name) return static_cast<Outcome>(k);
  }
  return Outcome::kInternalError;
}

}  // namespace

std::string ToJson(const ValidationReport& report) {
  return internal::SerializeJson(
      json::object{{"ok", report.ok}, {"violations", ViolationsToJson(report.violations)}});
}

std::string ToJson(const ExecutionResult& r) {
  return internal::SerializeJson(internal::ResultToJsonObject(r));
}

json::object internal::ResultToJsonObject(const ExecutionResult& r) {
  json::value output = OutputValue(r);
  json::value error;
  if (r.error) {
    error = json::object{{"type", Text(r.error->type)},
                         {"message", Text(r.error->message)},
                         {"traceback", Text(r.error->traceback)}};
  }
  json::array files;
  for (const auto& f : r.files) {
    files.push_back(FileToJson(f.path, f.media_type, f.size, internal::Base64Encode(f.data)));
  }
  json::array omitted;
  for (const auto& f : r.omitted_files) omitted.push_back(OmittedToJson(f));
  json::object o{
      {"schema_version", kResultSchemaVersion},
      {"stdout", Text(r.stdout_text)},
      {"stderr", Text(r.stderr_text)},
      {"stdout_truncated", r.stdout_truncated},
      {"stderr_truncated", r.stderr_truncated},
      {"exit_code", r.exit_code},
      {"success", r.success()},
      {"outcome", OutcomeName(r.outcome)},
      {"output_present", r.output_present},
      {"output", std::move(output)},
      {"error", std::move(error)},
      {"violations", ViolationsToJson(r.violations)},
      {"files", std::move(files)},
      {"omitted_files", std::move(omitted)},
      {"tool_calls", r.tool_calls},
      {"duration_ms", r.duration_ms},
      {"backend", r.backend},
      {"isolation", r.isolation},
      {"interpreter",
       r.interpreter.empty() ? json::value(nullptr) : json::value(Text(r.interpreter))},
      {"message", Text(r.message)},
      {"usage", json::object{{"cpu_ms", Optional(r.usage.cpu_ms)},
                             {"peak_memory_bytes", Optional(r.usage.peak_memory_bytes)},
                             {"workdir_bytes", Optional(r.usage.workdir_bytes)}}},
      {"session", r.session ? json::value(Text(*r.session)) : json::value(nullptr)},
      {"session_state",
       r.session_state ? json::value(SessionStateName(*r.session_state)) : json::value(nullptr)},
  };
  return o;
}

namespace internal {

std::size_t JsonTextBytes(std::string_view text) {
  return SerializeJson(json::value(Text(text))).size();
}

std::size_t JsonTextBytesUpperBound(std::size_t text_bytes) { return 6 * text_bytes + 2; }

std::size_t Base64Bytes(std::size_t data_bytes) { return (data_bytes + 2) / 3 * 4; }

std::size_t CapturedFileJsonBytes(std::string_view path, std::string_view media_type,
                                  std::int64_t size, std::size_t data_bytes) {
  return SerializeJson(FileToJson(path, media_type, size, "")).size() + Base64Bytes(data_bytes);
}

std::size_t CapturedFileJsonBytes(const CapturedFile& f) {
  return CapturedFileJsonBytes(f.path, f.media_type, f.size, f.data.size());
}

std::size_t OmittedFileJsonBytes(const OmittedFile& f) {
  return SerializeJson(OmittedToJson(f)).size();
}

std::size_t OutputJsonBytes(const ExecutionResult& r) {
  return SerializeJson(OutputValue(r)).size();
}

std::size_t ViolationJsonBytes(const Violation& v) {
  return SerializeJson(ViolationToJson(v)).size();
}

std::size_t ResultJsonBytes(const ExecutionResult& r) {
  // The fixed fields, serialised for real; then each large field added by its own size.
  ExecutionResult frame;
  frame.stdout_truncated = r.stdout_truncated;
  frame.stderr_truncated = r.stderr_truncated;
  frame.exit_code = r.exit_code;
  frame.outcome = r.outcome;
  frame.output_present = r.output_present;
  frame.output_json = "null";
  if (r.error) frame.error = UserError{};
  frame.tool_calls = r.tool_calls;
  frame.duration_ms = r.duration_ms;
  frame.backend = r.backend;
  frame.isolation = r.isolation;
  frame.session = r.session;
  frame.session_state = r.session_state;
  frame.interpreter = r.interpreter;
  std::size_t n = ToJson(frame).size();
  const auto text = [](const std::string& s) { return JsonTextBytes(s) - 2; };  // beyond ""
  n += text(r.stdout_text) + text(r.stderr_text) + text(r.message);
  if (r.error) n += text(r.error->type) + text(r.error->message) + text(r.error->traceback);
  n += OutputJsonBytes(r) - 4;  // beyond null
  std::size_t elements = 0;
  for (const auto& v : r.violations) elements += ViolationJsonBytes(v);
  n += ArrayBodyBytes(r.violations.size(), elements);
  elements = 0;
  for (const auto& f : r.files) elements += CapturedFileJsonBytes(f);
  n += ArrayBodyBytes(r.files.size(), elements);
  elements = 0;
  for (const auto& f : r.omitted_files) elements += OmittedFileJsonBytes(f);
  n += ArrayBodyBytes(r.omitted_files.size(), elements);
  return n;
}

std::size_t ResultJsonBytesUpperBound(const ExecutionResult& r) {
  // Field names, punctuation, numbers, booleans and the outcome's name come to ~400 bytes.
  constexpr std::size_t kFixed = 1024;
  const auto text = [](const std::string& s) { return JsonTextBytesUpperBound(s.size()); };
  std::size_t n = kFixed + text(r.stdout_text) + text(r.stderr_text) + text(r.message) +
                  text(r.backend) + text(r.isolation) + (r.session ? text(*r.session) : 0) +
                  text(r.interpreter);
  if (r.error) n += text(r.error->type) + text(r.error->message) + text(r.error->traceback);
  // Re-serialising the child's JSON can lengthen a number ("1e4" -> "10000.0"), never tripling it.
  if (r.output_present) n += 3 * r.output_json.size() + 4;
  for (const auto& v : r.violations) n += 96 + text(v.rule) + text(v.message) + text(v.hint);
  for (const auto& f : r.files)
    n += 96 + text(f.path) + text(f.media_type) + Base64Bytes(f.data.size());
  for (const auto& f : r.omitted_files) n += 32 + text(f.path) + text(f.reason);
  return n;
}

}  // namespace internal

StatusOr<ExecutionResult> ExecutionResultFromJson(std::string_view text) {
  try {
    const json::value v = json::parse(text);
    const json::object& o = v.as_object();
    ExecutionResult r;
    r.stdout_text = o.at("stdout").as_string();
    r.stderr_text = o.at("stderr").as_string();
    r.stdout_truncated = o.at("stdout_truncated").as_bool();
    r.stderr_truncated = o.at("stderr_truncated").as_bool();
    r.exit_code = static_cast<int>(o.at("exit_code").to_number<std::int64_t>());
    r.outcome = OutcomeFromName(o.at("outcome").as_string());
    r.output_present = o.at("output_present").as_bool();
    r.output_json = internal::SerializeJson(o.at("output"));
    if (const auto& e = o.at("error"); e.is_object()) {
      r.error =
          UserError{std::string(e.at("type").as_string()), std::string(e.at("message").as_string()),
                    std::string(e.at("traceback").as_string())};
    }
    for (const auto& item : o.at("violations").as_array()) {
      const auto& vo = item.as_object();
      r.violations.push_back({static_cast<int>(vo.at("line").to_number<std::int64_t>()),
                              static_cast<int>(vo.at("col").to_number<std::int64_t>()),
                              std::string(vo.at("rule").as_string()),
                              std::string(vo.at("message").as_string()),
                              std::string(vo.at("hint").as_string())});
    }
    for (const auto& item : o.at("files").as_array()) {
      const auto& fo = item.as_object();
      auto data = internal::Base64Decode(fo.at("data_base64").as_string());
      if (!data) return InvalidArgument("result file data is not valid base64");
      r.files.push_back({std::string(fo.at("path").as_string()),
                         std::string(fo.at("media_type").as_string()),
                         fo.at("size").to_number<std::int64_t>(), std::move(*data)});
    }
    for (const auto& item : o.at("omitted_files").as_array()) {
      const auto& fo = item.as_object();
      r.omitted_files.push_back(
          {std::string(fo.at("path").as_string()), std::string(fo.at("reason").as_string())});
    }
    r.tool_calls = o.at("tool_calls").to_number<std::int64_t>();
    r.duration_ms = o.at("duration_ms").to_number<std::int64_t>();
    r.backend = o.at("backend").as_string();
    r.isolation = o.at("isolation").as_string();
    if (const auto* i = o.if_contains("interpreter"); i && i->is_string())
      r.interpreter = i->as_string();
    if (const auto* m = o.if_contains("message"); m && m->is_string()) r.message = m->as_string();
    if (const auto* u = o.if_contains("usage"); u && u->is_object()) {
      r.usage.cpu_ms = OptionalNumber(u->as_object(), "cpu_ms");
      r.usage.peak_memory_bytes = OptionalNumber(u->as_object(), "peak_memory_bytes");
      r.usage.workdir_bytes = OptionalNumber(u->as_object(), "workdir_bytes");
    }
    if (const auto* n = o.if_contains("session"); n && n->is_string())
      r.session = std::string(n->as_string());
    if (const auto* st = o.if_contains("session_state"); st && st->is_string()) {
      for (SessionState state :
           {SessionState::kNew, SessionState::kKept, SessionState::kRestarted}) {
        if (st->as_string() == SessionStateName(state)) r.session_state = state;
      }
    }
    return r;
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
