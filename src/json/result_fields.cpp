#include "json/result_fields.hpp"

#include <functional>
#include <memory>
#include <vector>

#include "common/utf8.hpp"
#include "json/base64.hpp"
#include "json/result_json.hpp"
#include "json/result_size.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

using R = ExecutionResult;

// The value a reader needs: throws like json::object::at when the key is absent.
const json::value& Need(const json::value* v) {
  if (v == nullptr) throw std::out_of_range("a result field is missing");
  return *v;
}

json::object Type(std::string_view type) { return json::object{{"type", type}}; }
json::object Nullable(std::string_view type) {
  return json::object{{"type", json::array{type, "null"}}};
}
json::object ArrayOf(json::object properties) {
  return json::object{
      {"type", "array"},
      {"items", json::object{{"type", "object"}, {"properties", std::move(properties)}}}};
}

// Bytes of a text beyond its empty form "" (JsonTextBytes counts the quotes).
std::size_t TextBeyondEmpty(std::string_view s) { return JsonTextBytes(s) - 2; }

// Bytes of a JSON array whose elements take `element_bytes` in total, without its brackets.
std::size_t ArrayBodyBytes(std::size_t count, std::size_t element_bytes) {
  return element_bytes + (count > 0 ? count - 1 : 0);
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

// A text member the reader needs; its large part is the text itself.
ResultField TextField(std::string_view name, std::string R::*member, bool schema_required,
                      std::string_view meaning) {
  return {name,
          "string",
          schema_required,
          meaning,
          [member](const R& r) { return json::value(JsonText(r.*member)); },
          [member](const json::value* v, R& r) {
            r.*member = Need(v).as_string();
            return Status::Ok();
          },
          [] { return Type("string"); },
          [member](const R& r) { return TextBeyondEmpty(r.*member); },
          [member](R& r) { (r.*member).clear(); },
          [member](const R& r) { return JsonTextBytesUpperBound((r.*member).size()); }};
}

// A member written as is and read back with `get` (from the value a reader needs); its size is
// taken as fixed.
template <typename T, typename Get>
ResultField PlainField(std::string_view name, std::string_view type, bool schema_required,
                       std::string_view meaning, T R::*member, Get get) {
  return {name,
          type,
          schema_required,
          meaning,
          [member](const R& r) { return json::value(r.*member); },
          [member, get](const json::value* v, R& r) {
            r.*member = get(Need(v));
            return Status::Ok();
          },
          [type] { return Type(type); }};
}

template <typename T>
ResultField NumberField(std::string_view name, T R::*member, bool schema_required,
                        std::string_view meaning) {
  return PlainField(name, "integer", schema_required, meaning, member, [](const json::value& v) {
    return static_cast<T>(v.to_number<std::int64_t>());
  });
}

ResultField BoolField(std::string_view name, bool R::*member, std::string_view meaning) {
  return PlainField(name, "boolean", false, meaning, member,
                    [](const json::value& v) { return v.as_bool(); });
}

// A string member written as is (a name the code chose), read back when present.
ResultField NameField(std::string_view name, std::string R::*member, std::string_view meaning) {
  ResultField field = PlainField(name, "string", false, meaning, member,
                                 [](const json::value& v) { return std::string(v.as_string()); });
  field.large_bytes_upper_bound = [member](const R& r) {
    return JsonTextBytesUpperBound((r.*member).size());
  };
  return field;
}

ResultField ErrorField() {
  return {"error",
          "object or null",
          false,
          "the exception the code raised: {\"type\",\"message\",\"traceback\"}; null otherwise",
          [](const R& r) -> json::value {
            if (!r.error) return nullptr;
            return json::object{{"type", JsonText(r.error->type)},
                                {"message", JsonText(r.error->message)},
                                {"traceback", JsonText(r.error->traceback)}};
          },
          [](const json::value* v, R& r) {
            if (const auto& e = Need(v); e.is_object()) {
              r.error = UserError{std::string(e.at("type").as_string()),
                                  std::string(e.at("message").as_string()),
                                  std::string(e.at("traceback").as_string())};
            }
            return Status::Ok();
          },
          [] {
            return json::object{{"type", json::array{"object", "null"}},
                                {"properties", json::object{{"type", Type("string")},
                                                            {"message", Type("string")},
                                                            {"traceback", Type("string")}}}};
          },
          [](const R& r) -> std::size_t {
            if (!r.error) return 0;
            return TextBeyondEmpty(r.error->type) + TextBeyondEmpty(r.error->message) +
                   TextBeyondEmpty(r.error->traceback);
          },
          [](R& r) {
            if (r.error) r.error = UserError{};
          },
          [](const R& r) -> std::size_t {
            if (!r.error) return 0;
            return JsonTextBytesUpperBound(r.error->type.size()) +
                   JsonTextBytesUpperBound(r.error->message.size()) +
                   JsonTextBytesUpperBound(r.error->traceback.size());
          }};
}

ResultField OutputField() {
  return {"output", "any JSON", true,
          "the final expression's value (null when there is none: see output_present)",
          [](const R& r) { return OutputValue(r); },
          [](const json::value* v, R& r) {
            r.output_json = SerializeJson(Need(v));
            return Status::Ok();
          },
          [] {
            return json::object{{"description", "the final expression's value, any JSON"}};
          },
          [](const R& r) { return OutputJsonBytes(r) - 4; },  // beyond null
          [](R& r) { r.output_json = "null"; },
          // Re-serialising the child's JSON can lengthen a number ("1e4" -> "10000.0"), never
          // tripling it.
          [](const R& r) -> std::size_t {
            return r.output_present ? 3 * r.output_json.size() + 4 : 0;
          }};
}

// The parts of an array field that differ by its element: how one is written, read back (an
// error for a bad one; a missing key throws as json::object::at does), described, and sized
// (exactly, and at most from lengths alone).
template <typename T>
struct ArrayElement {
  std::function<json::value(const T&)> write;
  std::function<StatusOr<T>(const json::object&)> read;
  json::object properties;
  std::function<std::size_t(const T&)> bytes;
  std::function<std::size_t(const T&)> bytes_upper_bound;
};

// An optional array member of the result; its large part is every element.
template <typename T>
ResultField ArrayField(std::string_view name, std::string_view meaning, std::vector<T> R::*member,
                       ArrayElement<T> element) {
  auto e = std::make_shared<const ArrayElement<T>>(std::move(element));
  return {name,
          "array",
          false,
          meaning,
          [member, e](const R& r) {
            json::array out;
            for (const T& item : r.*member) out.push_back(e->write(item));
            return json::value(std::move(out));
          },
          [member, e](const json::value* v, R& r) {
            for (const auto& item : Need(v).as_array()) {
              StatusOr<T> read = e->read(item.as_object());
              if (!read.ok()) return read.status();
              (r.*member).push_back(std::move(*read));
            }
            return Status::Ok();
          },
          [e] { return ArrayOf(e->properties); },
          [member, e](const R& r) {
            std::size_t elements = 0;
            for (const T& item : r.*member) elements += e->bytes(item);
            return ArrayBodyBytes((r.*member).size(), elements);
          },
          [member](R& r) { (r.*member).clear(); },
          [member, e](const R& r) {
            std::size_t n = 0;
            for (const T& item : r.*member) n += e->bytes_upper_bound(item);
            return n;
          }};
}

ResultField ViolationsField() {
  return ArrayField<Violation>(
      "violations",
      "why the validator refused the code: {\"line\",\"col\",\"rule\",\"message\",\"hint\"} each",
      &R::violations,
      {[](const Violation& v) { return json::value(ViolationJson(v)); },
       [](const json::object& vo) -> StatusOr<Violation> {
         return Violation{static_cast<int>(vo.at("line").to_number<std::int64_t>()),
                          static_cast<int>(vo.at("col").to_number<std::int64_t>()),
                          std::string(vo.at("rule").as_string()),
                          std::string(vo.at("message").as_string()),
                          std::string(vo.at("hint").as_string())};
       },
       json::object{{"line", Type("integer")},
                    {"col", Type("integer")},
                    {"rule", Type("string")},
                    {"message", Type("string")},
                    {"hint", Type("string")}},
       ViolationJsonBytes,
       [](const Violation& v) {
         return 96 + JsonTextBytesUpperBound(v.rule.size()) +
                JsonTextBytesUpperBound(v.message.size()) + JsonTextBytesUpperBound(v.hint.size());
       }});
}

ResultField FilesField() {
  return ArrayField<CapturedFile>(
      "files",
      "files the code wrote under a read-write mount: {\"path\",\"media_type\",\"size\","
      "\"data_base64\"} each",
      &R::files,
      {[](const CapturedFile& f) {
         return json::value(
             CapturedFileJson(f.path, f.media_type, f.size, internal::Base64Encode(f.data)));
       },
       [](const json::object& fo) -> StatusOr<CapturedFile> {
         auto data = internal::Base64Decode(fo.at("data_base64").as_string());
         if (!data) return InvalidArgument("result file data is not valid base64");
         return CapturedFile{std::string(fo.at("path").as_string()),
                             std::string(fo.at("media_type").as_string()),
                             fo.at("size").to_number<std::int64_t>(), std::move(*data)};
       },
       json::object{{"path", Type("string")},
                    {"media_type", Type("string")},
                    {"size", Type("integer")},
                    {"data_base64", Type("string")}},
       [](const CapturedFile& f) { return CapturedFileJsonBytes(f); },
       [](const CapturedFile& f) {
         return 96 + JsonTextBytesUpperBound(f.path.size()) +
                JsonTextBytesUpperBound(f.media_type.size()) + (f.data.size() + 2) / 3 * 4;
       }});
}

ResultField OmittedFilesField() {
  return ArrayField<OmittedFile>(
      "omitted_files",
      "files left out of `files` (too large, too many, over the result budget): {\"path\","
      "\"reason\"} each",
      &R::omitted_files,
      {[](const OmittedFile& f) { return json::value(OmittedFileJson(f)); },
       [](const json::object& fo) -> StatusOr<OmittedFile> {
         return OmittedFile{std::string(fo.at("path").as_string()),
                            std::string(fo.at("reason").as_string())};
       },
       json::object{{"path", Type("string")}, {"reason", Type("string")}}, OmittedFileJsonBytes,
       [](const OmittedFile& f) {
         return 32 + JsonTextBytesUpperBound(f.path.size()) +
                JsonTextBytesUpperBound(f.reason.size());
       }});
}

ResultField UsageField() {
  return {
      "usage",
      "object",
      false,
      "what the run used, measured by its cgroup: {\"cpu_ms\",\"peak_memory_bytes\","
      "\"workdir_bytes\"}, each null where not measured",
      [](const R& r) {
        return json::value(json::object{{"cpu_ms", Optional(r.usage.cpu_ms)},
                                        {"peak_memory_bytes", Optional(r.usage.peak_memory_bytes)},
                                        {"workdir_bytes", Optional(r.usage.workdir_bytes)}});
      },
      [](const json::value* u, R& r) {
        if (u && u->is_object()) {
          r.usage.cpu_ms = OptionalNumber(u->as_object(), "cpu_ms");
          r.usage.peak_memory_bytes = OptionalNumber(u->as_object(), "peak_memory_bytes");
          r.usage.workdir_bytes = OptionalNumber(u->as_object(), "workdir_bytes");
        }
        return Status::Ok();
      },
      [] {
        return json::object{{"type", "object"},
                            {"properties", json::object{{"cpu_ms", Nullable("integer")},
                                                        {"peak_memory_bytes", Nullable("integer")},
                                                        {"workdir_bytes", Nullable("integer")}}}};
      }};
}

// What the code did: its streams, exit, outcome, value, error, violations and files.
void AddOutcomeFields(std::vector<ResultField>& t) {
  t.push_back({"schema_version", "integer", true,
               "raised only by a change that breaks a reader (kResultSchemaVersion)",
               [](const R&) { return json::value(kResultSchemaVersion); },
               [](const json::value*, R&) { return Status::Ok(); },
               [] { return Type("integer"); }});
  t.push_back(TextField("stdout", &R::stdout_text, true, "what the code printed"));
  t.push_back(TextField("stderr", &R::stderr_text, true, "what the code wrote to stderr"));
  t.push_back(
      BoolField("stdout_truncated", &R::stdout_truncated, "stdout was cut at max_stdout_bytes"));
  t.push_back(
      BoolField("stderr_truncated", &R::stderr_truncated, "stderr was cut at max_stderr_bytes"));
  t.push_back(NumberField("exit_code", &R::exit_code, true,
                          "0 ok; 1 the code raised; -1 the sandbox failed; 128+N a signal"));
  t.push_back({"success", "boolean", true, "exit_code 0 and outcome ok",
               [](const R& r) { return json::value(r.success()); },
               [](const json::value*, R&) { return Status::Ok(); },
               [] { return Type("boolean"); }});
  t.push_back({"outcome", "string", true,
               "ok, error, validation_failed, approval_required, timeout, memory_limit, "
               "cpu_limit, output_limit, disk_limit, killed, setup_error, unavailable, "
               "cancelled or internal_error",
               [](const R& r) { return json::value(OutcomeName(r.outcome)); },
               [](const json::value* v, R& r) {
                 r.outcome = OutcomeFromName(Need(v).as_string());
                 return Status::Ok();
               },
               [] { return Type("string"); }});
  t.push_back(BoolField("output_present", &R::output_present,
                        "the code ended with an expression whose value is `output`"));
  t.push_back(OutputField());
  t.push_back(ErrorField());
  t.push_back(ViolationsField());
  t.push_back(FilesField());
  t.push_back(OmittedFilesField());
}

// What ran and where: the counts, the backend and level, the notes, the usage and the session.
void AddRunFields(std::vector<ResultField>& t) {
  t.push_back(NumberField("tool_calls", &R::tool_calls, true, "host tool calls the run made"));
  t.push_back(NumberField("duration_ms", &R::duration_ms, false, "the run's wall-clock time"));
  t.push_back(NameField("backend", &R::backend, "local or hyperlight"));
  t.push_back(NameField("isolation", &R::isolation, "process, namespaces or microvm"));
  t.push_back({"interpreter", "string or null", false,
               "the child interpreter the local backend ran the code with; null elsewhere",
               [](const R& r) {
                 return r.interpreter.empty() ? json::value(nullptr)
                                              : json::value(JsonText(r.interpreter));
               },
               [](const json::value* i, R& r) {
                 if (i && i->is_string()) r.interpreter = i->as_string();
                 return Status::Ok();
               },
               [] { return Nullable("string"); }, nullptr, nullptr,
               [](const R& r) { return JsonTextBytesUpperBound(r.interpreter.size()); }});
  ResultField message = TextField("message", &R::message, false,
                                  "why the sandbox ended the run, for outcomes other than ok and "
                                  "error; notes otherwise");
  message.read = [](const json::value* m, R& r) {
    if (m && m->is_string()) r.message = m->as_string();
    return Status::Ok();
  };
  t.push_back(std::move(message));
  t.push_back(UsageField());
  t.push_back({"session", "string or null", false, "the session's name; null for a stateless run",
               [](const R& r) {
                 return r.session ? json::value(JsonText(*r.session)) : json::value(nullptr);
               },
               [](const json::value* n, R& r) {
                 if (n && n->is_string()) r.session = std::string(n->as_string());
                 return Status::Ok();
               },
               [] { return Nullable("string"); }, nullptr, nullptr,
               [](const R& r) -> std::size_t {
                 return r.session ? JsonTextBytesUpperBound(r.session->size()) : 0;
               }});
  t.push_back({"session_state", "string or null", false,
               "new, kept or restarted: how a session's run found its interpreter; null for a "
               "stateless run",
               [](const R& r) {
                 return r.session_state ? json::value(SessionStateName(*r.session_state))
                                        : json::value(nullptr);
               },
               [](const json::value* st, R& r) {
                 if (st && st->is_string()) {
                   for (SessionState state :
                        {SessionState::kNew, SessionState::kKept, SessionState::kRestarted}) {
                     if (st->as_string() == SessionStateName(state)) r.session_state = state;
                   }
                 }
                 return Status::Ok();
               },
               [] {
                 return json::object{{"type", json::array{"string", "null"}},
                                     {"enum", json::array{"new", "kept", "restarted", nullptr}}};
               }});
}

std::vector<ResultField> MakeTable() {
  std::vector<ResultField> t;
  AddOutcomeFields(t);
  AddRunFields(t);
  return t;
}

}  // namespace

std::span<const ResultField> ResultFieldTable() {
  static const std::vector<ResultField> table = MakeTable();
  return table;
}

json::string JsonText(std::string_view s) { return json::string(SanitizeUtf8(s)); }

json::object ViolationJson(const Violation& v) {
  return json::object{{"line", v.line},
                      {"col", v.col},
                      {"rule", JsonText(v.rule)},
                      {"message", JsonText(v.message)},
                      {"hint", JsonText(v.hint)}};
}

json::object CapturedFileJson(std::string_view path, std::string_view media_type, std::int64_t size,
                              std::string data_base64) {
  return json::object{{"path", JsonText(path)},
                      {"media_type", media_type},
                      {"size", size},
                      {"data_base64", std::move(data_base64)}};
}

json::object OmittedFileJson(const OmittedFile& f) {
  return json::object{{"path", JsonText(f.path)}, {"reason", JsonText(f.reason)}};
}

json::value OutputValue(const ExecutionResult& r) {
  if (!r.output_present) return nullptr;
  json::error_code ec;
  json::value output = json::parse(r.output_json, ec);
  if (ec) return nullptr;
  return output;
}

json::object ResultToJsonObject(const ExecutionResult& r) {
  json::object o;
  for (const ResultField& field : ResultFieldTable()) o[field.name] = field.write(r);
  return o;
}

json::object ResultSchemaObject() {
  json::object properties;
  json::array required;
  for (const ResultField& field : ResultFieldTable()) {
    properties[field.name] = field.schema();
    if (field.schema_required) required.emplace_back(field.name);
  }
  return json::object{
      {"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

StatusOr<ExecutionResult> ResultFromJsonObject(const json::object& o) {
  ExecutionResult r;
  for (const ResultField& field : ResultFieldTable()) {
    if (Status s = field.read(o.if_contains(field.name), r); !s.ok()) return s;
  }
  return r;
}

std::size_t ResultJsonBytes(const ExecutionResult& r) {
  // The fields with their large parts emptied, serialised for real; then each large part added
  // by its own size.
  ExecutionResult frame = r;
  std::size_t n = 0;
  for (const ResultField& field : ResultFieldTable()) {
    if (!field.large_bytes) continue;
    n += field.large_bytes(r);
    field.clear(frame);
  }
  return n + SerializeJson(ResultToJsonObject(frame)).size();
}

std::size_t ResultJsonBytesUpperBound(const ExecutionResult& r) {
  // Field names, punctuation, numbers, booleans and the outcome's name come to ~400 bytes.
  constexpr std::size_t kFixed = 1024;
  std::size_t n = kFixed;
  for (const ResultField& field : ResultFieldTable()) {
    if (field.large_bytes_upper_bound) n += field.large_bytes_upper_bound(r);
  }
  return n;
}

}  // namespace codeact::internal
