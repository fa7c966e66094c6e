// ExecutionRequest and ExecutionResult: what a run is given and what it returns.
// The JSON field names of ExecutionResult are a public contract (docs/result.md,
// json.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/cancellation.hpp"
#include "codeact/output_stream.hpp"
#include "codeact/validator.hpp"

namespace codeact {

enum class Outcome {
  kOk,
  kError,  // the user's code raised
  kValidationFailed,
  kApprovalRequired,
  kTimeout,  // wall clock
  kMemoryLimit,
  kCpuLimit,
  kOutputLimit,  // result value or a bridge frame over its cap
  kDiskLimit,    // a read-write mount, $TMPDIR or the working directory past its disk bound
  kKilled,       // died by a signal nobody asked for
  kSetupError,   // the sandbox could not be set up as configured
  kUnavailable,  // the backend cannot run here
  kCancelled,    // ended at the caller's request (ExecutionRequest::cancel), e.g. a server
                 // shutting down; its processes were killed like a timeout's
  kInternalError,
};

std::string_view OutcomeName(Outcome outcome);

// How a run of a session (session.hpp) found its interpreter: started for this run on the
// session's first use, the one earlier runs left (their globals are there), or a fresh one
// because the last run hit a limit or the interpreter died (the globals are gone).
enum class SessionState { kNew, kKept, kRestarted };

std::string_view SessionStateName(SessionState state);

struct ExecutionRequest {
  std::string code;
  // Cancelling it ends the run at once: the child's processes are killed, its tool calls are
  // cancelled, and the result is `cancelled` with the reason in `message`. A run cancelled
  // before it started never starts.
  CancellationToken cancel;
  // The run was approved: its tools marked requires_approval may be called (the bridge refuses
  // them otherwise). A stateless run gets its snapshot with those marks cleared instead; a
  // session keeps the tools it opened with and reads this.
  bool tools_approved = false;
  // Set (only for a backend whose traits say validates_in_child): the child validates the code
  // under this policy before it runs any of it; a rejection is a validation_failed result with
  // the violations, as the provider's own validation gives. A backend that cannot refuses the
  // run (setup_error) rather than run unvalidated code.
  std::optional<ValidationPolicy> validate_in_child;
  // Set: what the run prints reaches it in chunks while the run goes on (output_stream.hpp says
  // when, how big and on which thread). Unset: no thread, no wake-up, nothing changes.
  OutputCallback on_output;
  // Set (only for a backend whose traits say overlaps_validation): the provider's validation of
  // the code, which the backend calls once the code is in its child and before any of it runs,
  // so that validating and the child's compiling overlap. A rejection is a validation_failed
  // result with the violations, as the provider's own validation gives, and none of the code
  // runs. The run's wall clock includes the call.
  std::function<ValidationReport()> host_verdict;
};

struct CapturedFile {
  std::string path;  // mount_path/relative
  std::string media_type;
  std::int64_t size = 0;
  std::string data;  // raw bytes; base64 in JSON
};

struct OmittedFile {
  std::string path;
  std::string reason;
};

struct UserError {
  std::string type;
  std::string message;
  std::string traceback;
};

// What a run used, measured by its cgroup (local backend); a field is empty where it was not
// measured (no cgroup could be made, or another backend).
struct ResourceUsage {
  std::optional<std::int64_t> cpu_ms;  // CPU time of all the run's processes
  std::optional<std::int64_t>
      peak_memory_bytes;  // peak of the run's memory, memfd/tmpfs/page cache included
  std::optional<std::int64_t>
      workdir_bytes;  // files left in the working directory (not measured yet)
};

// The result JSON's `schema_version` (ToJson): raised only by a change that breaks a reader.
// New fields and new outcomes are additive and keep it (docs/result.md).
inline constexpr int kResultSchemaVersion = 1;

struct ExecutionResult {
  std::string stdout_text;
  std::string stderr_text;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  int exit_code = -1;  // 0 ok; 1 user exception; -1 sandbox failed; 128+N signal
  Outcome outcome = Outcome::kInternalError;
  bool output_present = false;
  std::string output_json = "null";  // the final expression's value, JSON-safe
  std::optional<UserError> error;
  std::vector<Violation> violations;
  std::vector<CapturedFile> files;
  std::vector<OmittedFile> omitted_files;
  std::int64_t tool_calls = 0;
  std::int64_t duration_ms = 0;
  std::string backend;    // "local", "hyperlight"
  std::string isolation;  // "process", "namespaces", "microvm"
  // The child interpreter the local backend ran the code with (e.g. /usr/bin/python3.11); empty
  // (null in JSON) where the code reached no local executor.
  std::string interpreter;
  std::string message;  // why the sandbox ended the run, for non-user outcomes
  ResourceUsage usage;
  // Set for a run of a session (session.hpp): its name and how it found its interpreter. A
  // stateless run has neither (JSON: `session` null, `session_state` null).
  std::optional<std::string> session;
  std::optional<SessionState> session_state;

  bool success() const { return exit_code == 0 && outcome == Outcome::kOk; }
};

// A result for a run that never started (validation, approval, setup, unavailable).
ExecutionResult NotRunResult(Outcome outcome, std::string message);

}  // namespace codeact
