// The protocol between the host and its Python children, defined once: every message type and
// field name, who sends it on which channel, and which fields it must carry. Two channels:
//   kBridge      newline-delimited compact JSON frames on the bridge fds (runner.py, the
//                hyperlight worker, the sandbox launcher's setup_error); typed in frames.hpp.
//   kForkServer  one compact JSON message per SOCK_SEQPACKET datagram between the host and the
//                zygote (fork_server.hpp); typed in fork_messages.hpp.
// The child side's copy of this table is resources/codeact_protocol.py;
// tests/unit/protocol/protocol_test.cpp fails when the two disagree (it compares
// ProtocolTableJson() with the Python module's TABLE).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace codeact::internal::protocol {

enum class Channel { kBridge, kForkServer };
enum class Sender { kHost, kChild };

enum class MessageType {
  // Bridge, host -> child.
  kGuard,       // the runtime guard's system part (and imports), to a child before its "ready"
  kRequest,     // the run: code, tool names, limits, the guard
  kToolResult,  // the answer to one tool_call
  kConfigure,   // hyperlight worker: the sandbox of the next run
  kVerdict,     // the host's go for a request with "await_verdict": the code may run
  // Bridge, child -> host.
  kReady,        // the child is waiting for its request
  kSetupError,   // the sandbox launcher failed before the runner started
  kGuardError,   // the runner could not arm its runtime guard; nothing ran
  kValidated,    // the validator's verdict in the child (a request with "validate"); first frame
  kToolCall,     // the code called a host tool
  kComplete,     // terminal: the run ended, with its output
  kError,        // terminal: the code raised
  kLimit,        // terminal: the output was over its limit
  kConfigured,   // hyperlight worker: the sandbox is ready
  kUnavailable,  // hyperlight worker: it cannot run (no SDK, no hypervisor, a failed guest)
  // Fork server, host -> zygote.
  kFork,  // fork one child for a run (its five fds travel with the message)
  kKill,  // SIGKILL a child's process group while it is unreaped
  // Fork server, zygote -> host.
  kZygoteReady,  // everything is loaded
  kForked,       // the answer to kFork: the child's pid
  kForkFailed,   // the answer to kFork: why there is no child
  kExited,       // a child was reaped
};

// Field names. A frame's "type" field holds its MessageSpec::name.
namespace field {
inline constexpr std::string_view kType = "type";
// guard, and the request's "guard" object
inline constexpr std::string_view kExec = "exec";
inline constexpr std::string_view kRead = "read";
inline constexpr std::string_view kWrite = "write";
inline constexpr std::string_view kTmp = "tmp";
inline constexpr std::string_view kBridgeFds = "bridge_fds";
inline constexpr std::string_view kMaxThreads = "max_threads";
// The request's "guard" always; the guard frame's when the host knows them (of the child's key)
inline constexpr std::string_view kImports = "imports";
// request
inline constexpr std::string_view kCode = "code";
inline constexpr std::string_view kTools = "tools";
inline constexpr std::string_view kMaxOutputBytes = "max_output_bytes";
inline constexpr std::string_view kMaxFrameBytes = "max_frame_bytes";
inline constexpr std::string_view kMaxToolCalls = "max_tool_calls";
inline constexpr std::string_view kGuard = "guard";
// request: the validator's policy (validator/policy.py's keys) when the child validates the code
// itself before running any of it; it answers with a "validated" frame first
inline constexpr std::string_view kValidate = "validate";
// request: true when the host finishes the run's preparation (its validation of the code among
// them) while the child prepares the code; the child compiles it, then waits for the host's
// "verdict" frame ("ok" true) before it runs any of it
inline constexpr std::string_view kAwaitVerdict = "await_verdict";
// validated: "ok", and when it is false the violations ([{line, col, rule, message, hint}]),
// the first of them when not all fit in a frame, and how many more there were
inline constexpr std::string_view kViolations = "violations";
inline constexpr std::string_view kViolationsDropped = "violations_dropped";
// tool_call, tool_result
inline constexpr std::string_view kId = "id";
inline constexpr std::string_view kName = "name";
inline constexpr std::string_view kKwargs = "kwargs";
inline constexpr std::string_view kOk = "ok";
inline constexpr std::string_view kResult = "result";
// error, tool_result, and the message of every failure
inline constexpr std::string_view kErrorType = "error_type";
inline constexpr std::string_view kMessage = "message";
inline constexpr std::string_view kTraceback = "traceback";
// complete, limit
inline constexpr std::string_view kOutputPresent = "output_present";
inline constexpr std::string_view kOutput = "output";
// complete: what the runner noticed about a run that otherwise succeeded (tool coroutines that
// were never awaited); becomes the result's message
inline constexpr std::string_view kNote = "note";
inline constexpr std::string_view kLimit = "limit";
// ready, setup_error
inline constexpr std::string_view kPython = "python";
inline constexpr std::string_view kPid = "pid";
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kErrno = "errno";
// ready: true from a session's runner (runner_session.py), which serves request after request
// on the same bridge, keeping its globals, instead of exiting after its terminal frame
inline constexpr std::string_view kSession = "session";
// configure, configured
inline constexpr std::string_view kFingerprint = "fingerprint";
inline constexpr std::string_view kInputDir = "input_dir";
inline constexpr std::string_view kOutputDir = "output_dir";
inline constexpr std::string_view kNetwork = "network";
inline constexpr std::string_view kEnvironment = "environment";
inline constexpr std::string_view kCpuTimeS = "cpu_time_s";
inline constexpr std::string_view kHeapSize = "heap_size";
inline constexpr std::string_view kStackSize = "stack_size";
inline constexpr std::string_view kMaxFileSizeBytes = "max_file_size_bytes";
inline constexpr std::string_view kTarget = "target";    // of an entry of "network"
inline constexpr std::string_view kMethods = "methods";  // of an entry of "network"
inline constexpr std::string_view kReused = "reused";
// fork server
inline constexpr std::string_view kToken = "token";
inline constexpr std::string_view kUid = "uid";
inline constexpr std::string_view kWorkdirBytes = "workdir_bytes";
inline constexpr std::string_view kWorkdir = "workdir";
inline constexpr std::string_view kTmpBytes = "tmp_bytes";    // a namespaces zygote's child
inline constexpr std::string_view kCgroupFds = "cgroup_fds";  // the child's join files
inline constexpr std::string_view kStatus = "status";
inline constexpr std::string_view kCpuUs = "cpu_us";
}  // namespace field

// The value of the request's "guard" when the guard frame's spec, imports included, is the run's.
inline constexpr std::string_view kGuardAsArmed = "armed";

struct MessageSpec {
  MessageType type;
  std::string_view name;  // the value of its "type" field
  Channel channel;
  Sender sender;
  std::span<const std::string_view> required;  // a message without one of these is malformed
  std::span<const std::string_view> optional;  // may be absent (each has a documented default)
};

// The table itself, header-only and without dependencies, so that the sandbox launcher (a
// program without Boost) names its setup_error frame from it too.
namespace table {
using namespace field;  // NOLINT: the table reads better with the bare names
using Names = std::span<const std::string_view>;

inline constexpr std::string_view kNone[] = {""};
inline constexpr Names None() { return Names(kNone, 0); }

inline constexpr std::string_view kGuardRequired[] = {kExec, kRead, kWrite, kBridgeFds};
inline constexpr std::string_view kGuardOptional[] = {kTmp, kMaxThreads, kImports};
inline constexpr std::string_view kRequestRequired[] = {kCode};
inline constexpr std::string_view kRequestOptional[] = {
    kTools, kMaxOutputBytes, kMaxFrameBytes, kMaxToolCalls, kGuard, kValidate, kAwaitVerdict};
inline constexpr std::string_view kToolResultRequired[] = {kId, kOk};
inline constexpr std::string_view kToolResultOptional[] = {kResult, kErrorType, kMessage};
inline constexpr std::string_view kConfigureRequired[] = {
    kFingerprint, kTools,    kInputDir, kOutputDir, kNetwork,
    kEnvironment, kCpuTimeS, kHeapSize, kStackSize, kMaxFileSizeBytes};
inline constexpr std::string_view kReadyOptional[] = {kPython, kPid, kSession};
inline constexpr std::string_view kMessageOnly[] = {kMessage};
inline constexpr std::string_view kSetupErrorOptional[] = {kStep, kErrno};
inline constexpr std::string_view kOkOnly[] = {kOk};
inline constexpr std::string_view kValidatedOptional[] = {kViolations, kViolationsDropped};
inline constexpr std::string_view kToolCallRequired[] = {kId, kName};
inline constexpr std::string_view kToolCallOptional[] = {kKwargs};
inline constexpr std::string_view kCompleteRequired[] = {kOutputPresent};
inline constexpr std::string_view kCompleteOptional[] = {kOutput, kNote};
inline constexpr std::string_view kErrorRequired[] = {kErrorType, kMessage};
inline constexpr std::string_view kErrorOptional[] = {kTraceback};
inline constexpr std::string_view kLimitOptional[] = {kLimit};
inline constexpr std::string_view kConfiguredRequired[] = {kReused};
inline constexpr std::string_view kForkRequired[] = {kToken, kUid, kWorkdirBytes, kWorkdir};
inline constexpr std::string_view kForkOptional[] = {kTmpBytes, kCgroupFds};
inline constexpr std::string_view kPidOnly[] = {kPid};
inline constexpr std::string_view kExitedRequired[] = {kPid, kStatus, kCpuUs};

inline constexpr Channel B = Channel::kBridge;
inline constexpr Channel F = Channel::kForkServer;
inline constexpr Sender H = Sender::kHost;
inline constexpr Sender C = Sender::kChild;

inline constexpr std::array kTable = {
    MessageSpec{MessageType::kGuard, "guard", B, H, kGuardRequired, kGuardOptional},
    MessageSpec{MessageType::kRequest, "request", B, H, kRequestRequired, kRequestOptional},
    MessageSpec{MessageType::kToolResult, "tool_result", B, H, kToolResultRequired,
                kToolResultOptional},
    MessageSpec{MessageType::kConfigure, "configure", B, H, kConfigureRequired, None()},
    MessageSpec{MessageType::kVerdict, "verdict", B, H, kOkOnly, None()},
    MessageSpec{MessageType::kReady, "ready", B, C, None(), kReadyOptional},
    MessageSpec{MessageType::kSetupError, "setup_error", B, C, kMessageOnly, kSetupErrorOptional},
    MessageSpec{MessageType::kGuardError, "guard_error", B, C, kMessageOnly, None()},
    MessageSpec{MessageType::kValidated, "validated", B, C, kOkOnly, kValidatedOptional},
    MessageSpec{MessageType::kToolCall, "tool_call", B, C, kToolCallRequired, kToolCallOptional},
    MessageSpec{MessageType::kComplete, "complete", B, C, kCompleteRequired, kCompleteOptional},
    MessageSpec{MessageType::kError, "error", B, C, kErrorRequired, kErrorOptional},
    MessageSpec{MessageType::kLimit, "limit", B, C, kMessageOnly, kLimitOptional},
    MessageSpec{MessageType::kConfigured, "configured", B, C, kConfiguredRequired, None()},
    MessageSpec{MessageType::kUnavailable, "unavailable", B, C, kMessageOnly, None()},
    MessageSpec{MessageType::kFork, "fork", F, H, kForkRequired, kForkOptional},
    MessageSpec{MessageType::kKill, "kill", F, H, kPidOnly, None()},
    MessageSpec{MessageType::kZygoteReady, "zygote_ready", F, C, kPidOnly, None()},
    MessageSpec{MessageType::kForked, "forked", F, C, kPidOnly, None()},
    MessageSpec{MessageType::kForkFailed, "fork_failed", F, C, kMessageOnly, None()},
    MessageSpec{MessageType::kExited, "exited", F, C, kExitedRequired, None()},
};

// The table is indexed by MessageType: a reordering would be caught here, at compile time.
inline constexpr bool InEnumOrder() {
  for (std::size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<std::size_t>(kTable[i].type) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kTable must list the messages in MessageType order");

}  // namespace table

// Every message, in MessageType order.
constexpr std::span<const MessageSpec> MessageTable() { return table::kTable; }
constexpr const MessageSpec& Spec(MessageType type) {
  return table::kTable[static_cast<std::size_t>(type)];
}
constexpr std::string_view Name(MessageType type) { return Spec(type).name; }
// The message of that name on that channel; null for a type the protocol does not know (a
// receiver ignores those on the bridge).
constexpr const MessageSpec* FindMessage(Channel channel, std::string_view name) {
  for (const MessageSpec& spec : table::kTable) {
    if (spec.channel == channel && spec.name == name) return &spec;
  }
  return nullptr;
}

// The table as JSON text, for the agreement test with resources/codeact_protocol.py:
// {"messages":{name:{"channel","sender","required":[...],"optional":[...]}},
//  "request_defaults":{"max_output_bytes":N,"max_frame_bytes":N,"max_tool_calls":N},
//  "bridge_fds":[read fd, write fd]}
std::string ProtocolTableJson();

}  // namespace codeact::internal::protocol
