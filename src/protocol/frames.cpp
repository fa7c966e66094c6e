#include "protocol/frames.hpp"

#include <limits>
#include <utility>

#include "json/policy_json.hpp"
#include "json/serialize.hpp"
#include "protocol/frame_codec.hpp"
#include "protocol/protocol.hpp"

namespace codeact::internal::protocol {
namespace json = boost::json;
namespace {

// The fields of one frame from the child, read with the error a malformed one deserves.
class Fields {
 public:
  Fields(json::object& frame, std::string_view type) : frame_(frame), type_(type) {}

  Status Malformed(std::string_view key, std::string_view problem) const {
    return InvalidArgument("malformed " + std::string(type_) + " frame from the child: \"" +
                           std::string(key) + "\" " + std::string(problem));
  }
  // Every field the table requires of this frame type is there.
  Status CheckRequired(const MessageSpec& spec) const {
    for (std::string_view key : spec.required) {
      if (!frame_.contains(key)) return Malformed(key, "is missing");
    }
    return Status::Ok();
  }
  // Each reader leaves `out` alone when the field is absent.
  Status String(std::string_view key, std::string& out) const {
    return Read(key, out, "must be a string", [](json::value& v) { return v.if_string(); });
  }
  Status Bool(std::string_view key, bool& out) const {
    return Read(key, out, "must be a boolean", [](json::value& v) { return v.if_bool(); });
  }
  Status Int(std::string_view key, std::int64_t& out) const {
    return Read(key, out, "must be an integer", [](json::value& v) { return v.if_int64(); });
  }
  // Moves the object out of the frame (a tool call's arguments may be most of a megabyte).
  Status Object(std::string_view key, json::object& out) const {
    return Read(key, out, "must be an object", [](json::value& v) { return v.if_object(); });
  }
  // The field as `typed` finds it in the value (null: of another type), moved into `out`.
  template <typename T, typename Typed>
  Status Read(std::string_view key, T& out, std::string_view must_be, Typed typed) const {
    json::value* v = frame_.if_contains(key);
    if (v == nullptr) return Status::Ok();
    auto* value = typed(*v);
    if (value == nullptr) return Malformed(key, must_be);
    out = std::move(*value);
    return Status::Ok();
  }
  // A list of violations: objects with integer "line" and "col" and string "rule", "message"
  // and "hint".
  Status Violations(std::string_view key, std::vector<Violation>& out) const {
    const json::value* v = frame_.if_contains(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_array()) return Malformed(key, "must be a list");
    for (const json::value& item : v->as_array()) {
      const json::object* o = item.if_object();
      Violation violation;
      const auto integer = [o](std::string_view name, int& to) {
        const json::value* n = o->if_contains(name);
        if (n == nullptr || !n->is_int64() || n->as_int64() < 0 ||
            n->as_int64() > std::numeric_limits<int>::max())
          return false;
        to = static_cast<int>(n->as_int64());
        return true;
      };
      const auto text = [o](std::string_view name, std::string& to) {
        const json::value* t = o->if_contains(name);
        if (t == nullptr || !t->is_string()) return false;
        to = std::string(t->as_string());
        return true;
      };
      if (o == nullptr || !integer("line", violation.line) || !integer("col", violation.col) ||
          !text("rule", violation.rule) || !text("message", violation.message) ||
          !text("hint", violation.hint)) {
        return Malformed(key, "must hold objects with line, col, rule, message and hint");
      }
      out.push_back(std::move(violation));
    }
    return Status::Ok();
  }
  const json::value* Find(std::string_view key) const { return frame_.if_contains(key); }

 private:
  json::object& frame_;
  std::string_view type_;
};

// Runs the readers in order and stops at the first malformed field.
template <typename... Checks>
Status All(Checks... checks) {
  Status s = Status::Ok();
  ((s.ok() ? (s = checks(), 0) : 0), ...);
  return s;
}

StatusOr<ChildFrame> DecodeToolCall(const Fields& f) {
  ToolCallFrame call;
  Status s = All([&] { return f.Int(field::kId, call.id); },
                 [&] { return f.String(field::kName, call.name); },
                 [&] { return f.Bool(kKwargsTooDeep, call.kwargs_too_deep); });
  if (!s.ok()) return s;
  if (!call.kwargs_too_deep) {
    if (Status k = f.Object(field::kKwargs, call.kwargs); !k.ok()) return k;
  }
  return ChildFrame(std::move(call));
}

StatusOr<ChildFrame> DecodeComplete(const Fields& f) {
  CompleteFrame complete;
  if (Status s = f.Bool(field::kOutputPresent, complete.output_present); !s.ok()) return s;
  if (Status s = f.String(field::kNote, complete.note); !s.ok()) return s;
  if (Status s = f.Int(kOutputTextBytes, complete.output_text_bytes); !s.ok()) return s;
  if (const json::value* out = f.Find(field::kOutput); out != nullptr && complete.output_present) {
    complete.output_json = SerializeJson(*out);
  }
  return ChildFrame(std::move(complete));
}

StatusOr<ChildFrame> DecodeValidated(const Fields& f) {
  ValidatedFrame v;
  Status s = All([&] { return f.Bool(field::kOk, v.ok); },
                 [&] { return f.Violations(field::kViolations, v.violations); },
                 [&] { return f.Int(field::kViolationsDropped, v.violations_dropped); });
  if (!s.ok()) return s;
  if (v.violations_dropped < 0)
    return f.Malformed(field::kViolationsDropped, "must not be negative");
  if (v.ok != v.violations.empty()) {
    return f.Malformed(field::kViolations, v.ok ? "must be empty when \"ok\" is true"
                                                : "must name why when \"ok\" is false");
  }
  return ChildFrame(std::move(v));
}

// The fields of a known frame, each of its type when present.
StatusOr<ChildFrame> DecodeFields(const MessageSpec& spec, const Fields& f) {
  auto with_message = [&f]<typename Frame>(Frame frame) -> StatusOr<ChildFrame> {
    if (Status s = f.String(field::kMessage, frame.message); !s.ok()) return s;
    return ChildFrame(std::move(frame));
  };
  switch (spec.type) {
    case MessageType::kReady:
      return ChildFrame(ReadyFrame{});
    case MessageType::kSetupError:
      return with_message(SetupErrorFrame{});
    case MessageType::kGuardError:
      return with_message(GuardErrorFrame{});
    case MessageType::kValidated:
      return DecodeValidated(f);
    case MessageType::kToolCall:
      return DecodeToolCall(f);
    case MessageType::kComplete:
      return DecodeComplete(f);
    case MessageType::kError: {
      ErrorFrame e;
      Status s = All([&] { return f.String(field::kErrorType, e.error_type); },
                     [&] { return f.String(field::kMessage, e.message); },
                     [&] { return f.String(field::kTraceback, e.traceback); });
      if (!s.ok()) return s;
      return ChildFrame(std::move(e));
    }
    case MessageType::kLimit:
      return with_message(LimitFrame{});
    case MessageType::kConfigured: {
      ConfiguredFrame c;
      if (Status s = f.Bool(field::kReused, c.reused); !s.ok()) return s;
      return ChildFrame(c);
    }
    case MessageType::kUnavailable:
      return with_message(UnavailableFrame{});
    default:
      return ChildFrame(UnknownFrame{std::string(spec.name)});
  }
}

// A field of the wrong type is named before a missing one. A tool call whose arguments were too
// deep to parse keeps only what FrameDecoder could read of it; it is answered, not refused.
StatusOr<ChildFrame> DecodeKnown(const MessageSpec& spec, const Fields& f) {
  StatusOr<ChildFrame> frame = DecodeFields(spec, f);
  if (!frame.ok()) return frame;
  if (const auto* call = std::get_if<ToolCallFrame>(&*frame);
      call != nullptr && call->kwargs_too_deep) {
    return frame;
  }
  if (Status s = f.CheckRequired(spec); !s.ok()) return s;
  return frame;
}

}  // namespace

std::string EncodeRequest(const RequestFrame& r) {
  json::array tools;
  for (const auto& t : r.tools) tools.emplace_back(t);
  json::object frame{
      {field::kType, Name(MessageType::kRequest)}, {field::kCode, r.code},
      {field::kTools, std::move(tools)},           {field::kMaxOutputBytes, r.max_output_bytes},
      {field::kMaxFrameBytes, r.max_frame_bytes},  {field::kMaxToolCalls, r.max_tool_calls}};
  if (r.guard != nullptr) {
    frame[field::kGuard] =
        r.guard_as_armed ? json::value(kGuardAsArmed) : json::value(GuardRequestJson(*r.guard));
  }
  if (r.validate != nullptr) frame[field::kValidate] = PolicyForValidator(*r.validate);
  if (r.await_verdict) frame[field::kAwaitVerdict] = true;
  return EncodeFrame(frame);
}

std::string EncodeVerdict() {
  return EncodeFrame({{field::kType, Name(MessageType::kVerdict)}, {field::kOk, true}});
}

std::string EncodeGuard(const RuntimeGuardSpec& spec, bool with_imports) {
  json::object frame = with_imports ? GuardRequestJson(spec) : GuardSystemJson(spec);
  frame[field::kType] = Name(MessageType::kGuard);
  return EncodeFrame(frame);
}

std::string EncodeToolSuccess(std::int64_t id, json::value result) {
  return EncodeFrame({{field::kType, Name(MessageType::kToolResult)},
                      {field::kId, id},
                      {field::kOk, true},
                      {field::kResult, std::move(result)}});
}

std::string EncodeToolFailure(std::int64_t id, std::string_view error_type,
                              std::string_view message) {
  return EncodeFrame({{field::kType, Name(MessageType::kToolResult)},
                      {field::kId, id},
                      {field::kOk, false},
                      {field::kErrorType, error_type},
                      {field::kMessage, message}});
}

StatusOr<ChildFrame> DecodeChildFrame(json::object frame) {
  const json::value* type = frame.if_contains(field::kType);
  if (type == nullptr || !type->is_string()) {
    return InvalidArgument("malformed frame from the child: \"type\" must be a string");
  }
  const std::string_view name = type->as_string();
  const MessageSpec* spec = FindMessage(Channel::kBridge, name);
  if (spec == nullptr || spec->sender != Sender::kChild)
    return ChildFrame(UnknownFrame{std::string(name)});
  return DecodeKnown(*spec, Fields(frame, spec->name));
}

}  // namespace codeact::internal::protocol
