// Bridge frames as types (their names and fields: protocol.hpp): the frames the host sends,
// each encoded here only, and the frames a child sends, decoded strictly from an untrusted JSON
// object into one type each. Framing (newlines, the byte cap) is frame_codec.hpp's.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codeact/policy.hpp"
#include "codeact/status.hpp"
#include "codeact/validator.hpp"
#include "protocol/runtime_guard_spec.hpp"

namespace codeact::internal::protocol {

// --- host -> child -----------------------------------------------------------------------------

struct RequestFrame {
  std::string code;
  std::vector<std::string> tools;
  std::int64_t max_output_bytes = 0;
  std::int64_t max_frame_bytes = 0;
  std::int64_t max_tool_calls = 0;
  const RuntimeGuardSpec* guard = nullptr;  // null: no "guard" field (no runtime guard)
  // Not null: the child validates the code under this policy before it runs any of it, and
  // answers with a "validated" frame first. The guard's "imports" are then the child's to
  // compute from the policy.
  const ValidationPolicy* validate = nullptr;
  // The host finishes the run's preparation (and validates the code) while the child prepares
  // it: the child runs none of it before the frame of EncodeVerdict ("await_verdict":true).
  bool await_verdict = false;
  // The child's guard frame held `guard`, imports included (EncodeGuard with them): the request
  // says "guard":"armed" (kGuardAsArmed) instead of repeating it. Not with `validate`.
  bool guard_as_armed = false;
};
std::string EncodeRequest(const RequestFrame& request);

// {"type":"verdict","ok":true}: the code of a request with "await_verdict" may run (the host's
// preparation is done and its validator, when it validates, passed it).
std::string EncodeVerdict();

// {<the system part of spec>,"type":"guard"}, with spec's "imports" too when `with_imports`.
std::string EncodeGuard(const RuntimeGuardSpec& spec, bool with_imports);

// {"type":"tool_result","id":N,"ok":true,"result":<result>}
std::string EncodeToolSuccess(std::int64_t id, boost::json::value result);
// {"type":"tool_result","id":N,"ok":false,"error_type":...,"message":...}
std::string EncodeToolFailure(std::int64_t id, std::string_view error_type,
                              std::string_view message);

// --- child -> host -----------------------------------------------------------------------------

struct ReadyFrame {};
struct SetupErrorFrame {
  std::string message;
};
struct GuardErrorFrame {
  std::string message;
};
// The verdict of a child that validated the code itself: when not ok, it ran none of it and
// ends with this frame. Never ok with violations, never rejected without one.
struct ValidatedFrame {
  bool ok = false;
  std::vector<Violation> violations;
  std::int64_t violations_dropped = 0;  // more violations than fitted in the frame
};
struct ToolCallFrame {
  std::int64_t id = 0;
  std::string name;
  boost::json::object kwargs;    // {} when the frame has none
  bool kwargs_too_deep = false;  // FrameDecoder could not parse them (frame_codec.hpp)
};
struct CompleteFrame {
  bool output_present = false;
  std::string output_json = "null";    // the output's JSON text when present
  std::string note;                    // "" when absent (protocol.hpp, field::kNote)
  std::int64_t output_text_bytes = 0;  // the output as sent (frame_codec.hpp, kOutputTextBytes)
};
struct ErrorFrame {
  std::string error_type;
  std::string message;
  std::string traceback;  // "" when absent
};
struct LimitFrame {
  std::string message;
};
struct ConfiguredFrame {
  bool reused = false;
};
struct UnavailableFrame {
  std::string message;
};
// A type this protocol does not know, or one the host itself sends: receivers ignore it.
struct UnknownFrame {
  std::string type;
};

using ChildFrame = std::variant<ReadyFrame, SetupErrorFrame, GuardErrorFrame, ValidatedFrame,
                                ToolCallFrame, CompleteFrame, ErrorFrame, LimitFrame,
                                ConfiguredFrame, UnavailableFrame, UnknownFrame>;

// One frame from a child. INVALID_ARGUMENT, naming the frame type and the field, for a frame
// without a string "type", or a known frame without a field it requires or with a field of the
// wrong type ("malformed tool_call frame from the child: \"id\" must be an integer").
StatusOr<ChildFrame> DecodeChildFrame(boost::json::object frame);

}  // namespace codeact::internal::protocol
