// CodeActProvider: the registries (tools, mounts, network targets), the RunSnapshot frozen per
// run with its config fingerprint, approval, the agent instructions and the per-run
// `execute_code` description. ExecuteCodeFunction is the one tool the model sees.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/egress_target.hpp"
#include "codeact/execution.hpp"
#include "codeact/executor.hpp"
#include "codeact/file_mount.hpp"
#include "codeact/limits.hpp"
#include "codeact/mcp_upstream.hpp"
#include "codeact/policy.hpp"
#include "codeact/session.hpp"
#include "codeact/status.hpp"
#include "codeact/tool.hpp"
#include "codeact/validator.hpp"

namespace codeact {

enum class ApprovalMode { kNeverRequire, kAlwaysRequire };

// Per-tool approval: a run needs approval only when its code references a tool marked
// `requires_approval` (read statically, by name: src/provider/tool_references.hpp), or names tools
// dynamically (`call_tool(name)` with a variable), which counts as referencing every tool; or
// always, under ApprovalMode::kAlwaysRequire. An approved run may call every tool. In a run that
// was not approved the bridge refuses each call of a gated tool, whatever the code did to reach
// it: the code gets ToolError with error_type "ApprovalRequired".
//
// What the host is asked to approve: the whole code block, and the gated tools it can call.
struct ApprovalRequest {
  std::string code;
  std::vector<std::string> tools_requiring_approval;  // referenced by the code, sorted
  bool any_tool = false;         // the code names tools dynamically: it can call any of them
  bool always_required = false;  // ApprovalMode::kAlwaysRequire
};
using ApprovalCallback = std::function<bool(const ApprovalRequest&)>;

// The execute_code description in two parts. `core` is what every call needs: the interpreter,
// the allowed imports and builtins, the code size, the limits, how tools are called and what
// comes back, the result fields; at most kDescriptionCoreBudget characters under the default
// policy (a test holds it there). `details` grows with the configuration: the tool signatures,
// mounts and network targets. ToolDescription is core, a blank line, details.
struct ToolDescriptionParts {
  std::string core;
  std::string details;
};
inline constexpr std::size_t kDescriptionCoreBudget = 2000;

struct InvokeOptions {
  std::optional<bool> approved;  // an explicit decision wins over the callback
  ApprovalCallback approve;      // asked when no explicit decision is given
  CancellationToken cancel;      // ends the run as `cancelled` (ExecutionRequest::cancel)
  std::string tenant;            // the caller the run is for (RunSnapshot::tenant); "": the host's
  OutputCallback on_output;      // streams the run's output (ExecutionRequest::on_output)
};

struct ProviderOptions {
  ExecutorOptions executor;
  ExecutionLimits limits;
  ValidationPolicy policy;
  std::map<std::string, std::string> environment;  // the child's whole environment
  ApprovalMode approval_mode = ApprovalMode::kNeverRequire;
  bool validate = true;  // false only for trusted code (tests, --no-validate)
  SessionSettings sessions;
  // A host directory as the code's working files (Microsoft Agent Framework's
  // WorkingDirectory): a read-write mount at kWorkingDirectoryMount, captured and bounded like
  // any read-write mount (FileMount's write_bytes_limit). Empty: none. Create fails when the
  // directory is not a usable mount.
  std::string working_directory;
};
inline constexpr const char* kWorkingDirectoryMount = "/work";

namespace internal {
class McpUpstream;
class SessionTable;
class ProviderSession;
}  // namespace internal

class CodeActProvider : public std::enable_shared_from_this<CodeActProvider> {
 public:
  // The provider over `executor`, or over a new executor of `options.executor` when null (its
  // backend and level then come from the options; `auto` is resolved here). `validator` null:
  // the embedded one. LocalCodeActProvider and HyperlightCodeActProvider name the two backends.
  static StatusOr<std::shared_ptr<CodeActProvider>> Create(
      ProviderOptions options, std::unique_ptr<Executor> executor = nullptr,
      std::shared_ptr<Validator> validator = nullptr);

  // Registries: keyed by tool name, normalised mount path and host; Add replaces. Thread-safe.
  // A tool whose name the code could not reach as a function (a keyword, a builtin such as
  // `sum`, call_tool/ToolError, a dunder, or a module the policy allows) is refused with the
  // reason (src/provider/tool_names.hpp); the batch forms change nothing unless every item is
  // accepted. The List* getters return every entry, sorted by key.
  Status AddTool(HostTool tool);
  Status AddTools(std::vector<HostTool> tools);
  std::optional<HostTool> GetTool(const std::string& name) const;
  std::vector<HostTool> ListTools() const;
  bool RemoveTool(const std::string& name);
  std::size_t RemoveTools(const std::vector<std::string>& names);  // how many were there
  void ClearTools();
  // A mount is validated and normalised (a directory or a single file, file_mount.hpp), and the
  // whole set after the change must pass CheckMountLayout, else nothing changes.
  Status AddMount(FileMount mount);
  Status AddMounts(std::vector<FileMount> mounts);
  std::optional<FileMount> GetMount(const std::string& mount_path) const;
  std::vector<FileMount> ListMounts() const;
  bool RemoveMount(const std::string& mount_path);
  std::size_t RemoveMounts(const std::vector<std::string>& mount_paths);
  void ClearMounts();
  // A target is parsed here, once (codeact/egress_target.hpp gives the grammar): a malformed one
  // is refused with INVALID_ARGUMENT naming it and what is wrong. The List/Remove calls speak of
  // targets as they were written.
  Status AddNetworkTarget(const std::string& target);
  std::vector<std::string> ListNetworkTargets() const;
  bool RemoveNetworkTarget(const std::string& target);
  void ClearNetworkTargets();
  // Starts an upstream MCP server and adds its tools as "NAME.tool" (codeact/mcp_upstream.hpp):
  // the code calls them as `await NAME.tool(arg=value)`. Refuses a NAME that shadows a keyword,
  // builtin or standard-library module, or is taken by a host tool or another server; fails
  // when the server does not start, initialize and list its tools in time. The server runs until
  // RemoveMcpServer or the provider ends.
  Status AddMcpServer(McpUpstreamOptions options);
  bool RemoveMcpServer(const std::string& name);
  std::vector<std::string> McpServerNames() const;
  void SetLimits(const ExecutionLimits& limits);
  void SetEnvironment(std::map<std::string, std::string> environment);

  // Frozen copy of everything a run depends on, with its fingerprint (sorted tool names and
  // the registry version, mounts, network targets, limits, environment, policy, backend). An
  // upstream MCP server that said its tools changed is listed again first (a failed listing is
  // logged and keeps its old tools).
  RunSnapshot Snapshot() const;
  // Whether any tool of `snapshot` is gated (or every run is): some run may need approval.
  bool RequiresApproval(const RunSnapshot& snapshot) const;
  // What a run of `code` must have approved; nothing to ask when `tools_requiring_approval` is
  // empty and `always_required` is false.
  ApprovalRequest ApprovalFor(const std::string& code, const RunSnapshot& snapshot) const;
  ApprovalMode approval_mode() const { return options_.approval_mode; }

  // Text for the agent: how to use execute_code well. `tools_visible_to_model`: the host tools
  // are also given to the model as tools of their own (Microsoft Agent Framework's manual
  // wiring), so the text does not say they are reachable only from inside the code.
  std::string Instructions(bool tools_visible_to_model = false) const;
  // The execute_code description for this snapshot (ToolDescriptionParts): the policy, limits,
  // how to call tools, the result fields, the rule that state does not persist between calls,
  // then tools with call forms, mounts and network.
  std::string ToolDescription(const RunSnapshot& snapshot) const;
  ToolDescriptionParts DescribeRun(const RunSnapshot& snapshot) const;

  // One execution: approval, then validation, then the executor. Never throws.
  ExecutionResult Execute(const std::string& code, const InvokeOptions& options = {});
  ExecutionResult Execute(const std::string& code, const RunSnapshot& snapshot,
                          const InvokeOptions& options);

  // Prepares the executor for runs under the current configuration (warm children), without
  // waiting; long-lived servers call it at start-up so their first run is warm too.
  void Warm() { executor_->Warm(Snapshot()); }

  // A session (session.hpp) under the current snapshot, fixed for its life. Fails with the
  // reason where the executor cannot keep sessions apart, or when max_sessions are open.
  StatusOr<std::shared_ptr<Session>> OpenSession(const SessionOptions& options = {});
  // Sessions open now (expired and closed ones are not counted).
  int OpenSessionCount() const;

  Executor& executor() { return *executor_; }

  ~CodeActProvider();

 private:
  friend class internal::ProviderSession;
  Status CheckToolName(const std::string& name) const;
  // Where the code is validated, when the provider validates at all.
  enum class ValidationSite {
    kFirst,       // by the provider, before `run`
    kChild,       // by the run's child (ExecutionRequest::validate_in_child)
    kOverlapped,  // by the provider, inside `run` while the child compiles it (host_verdict)
  };
  // Approval, the code's checks and validation, then `run` with the snapshot as approved (a gated
  // tool of an approved run unmarked): Execute's steps for any executor.
  ExecutionResult Vet(
      const std::string& code, const RunSnapshot& snapshot, const InvokeOptions& options,
      const std::function<ExecutionResult(const ExecutionRequest&, const RunSnapshot&)>& run,
      ValidationSite site = ValidationSite::kFirst);
  // Vet's validation at `site`: handed to the child or the executor in `to_run`, or done here;
  // the rejection when it was done here and failed.
  std::optional<ExecutionResult> PlaceValidation(const std::string& code,
                                                 const RunSnapshot& snapshot, ValidationSite site,
                                                 ExecutionRequest& to_run) const;

  CodeActProvider(ProviderOptions options, std::shared_ptr<Validator> validator,
                  std::unique_ptr<Executor> executor);

  const ProviderOptions options_;
  const std::shared_ptr<Validator> validator_;
  const std::unique_ptr<Executor> executor_;
  ToolRegistry tools_;
  // After tools_: the servers end, and their tools leave the registry, before it goes.
  mutable std::mutex upstreams_mu_;
  std::map<std::string, std::unique_ptr<internal::McpUpstream>> upstreams_;
  mutable std::mutex mu_;
  std::map<std::string, FileMount> mounts_;
  std::vector<EgressTarget> network_targets_;  // sorted by text
  ExecutionLimits limits_;
  std::map<std::string, std::string> environment_;
  std::shared_ptr<internal::SessionTable> sessions_;
};

// The local backend (process or namespaces isolation): CodeActProvider::Create on it.
struct LocalCodeActProvider {
  static StatusOr<std::shared_ptr<CodeActProvider>> Create(ProviderOptions options = {});
};

// The shapes of the execute_code definition (src/json/tool_formats.hpp has each one):
// kOpenAI: Chat Completions `tools` entry; kOpenAIResponses: Responses API `tools` entry;
// kAnthropic: Messages API `tools` entry (`input_schema`); kMcp: a tools/list entry with
// `outputSchema`. The first three are strict (`"strict": true`, optional fields required and
// nullable) where the schema has a strict form; MCP has no strict mode.
enum class DefinitionFormat { kOpenAI, kOpenAIResponses, kAnthropic, kMcp };
// "openai", "openai-responses", "anthropic", "mcp"; ParseDefinitionFormat is the inverse.
std::string_view DefinitionFormatName(DefinitionFormat format);
std::optional<DefinitionFormat> ParseDefinitionFormat(std::string_view name);

// The `execute_code` tool as the model sees it, bound to one RunSnapshot: the one taken at
// construction or by the last Refresh(). Definition() describes that snapshot and Invoke() runs
// under it, so the code runs with exactly the tools, mounts, limits and policy the model was
// shown; registry changes reach the model (and the runs) only through Refresh(). Thread-safe.
class ExecuteCodeFunction {
 public:
  explicit ExecuteCodeFunction(std::shared_ptr<CodeActProvider> provider);
  // A copy is bound to the same snapshot, then refreshed on its own.
  ExecuteCodeFunction(const ExecuteCodeFunction& other);
  ExecuteCodeFunction& operator=(const ExecuteCodeFunction& other);

  static constexpr const char* kName = "execute_code";

  // Takes a new snapshot of the provider's configuration. Returns whether it differs from the
  // one it replaces (its fingerprint), i.e. whether the definition the model has is stale.
  bool Refresh();
  // Whether the provider's configuration differs from the bound snapshot now.
  bool Stale() const;
  // The bound snapshot.
  std::shared_ptr<const RunSnapshot> snapshot() const;

  // The definition in `format`'s shape (DefinitionFormat), described from the bound snapshot.
  std::string Definition(DefinitionFormat format) const;

  // `arguments_json` is {"code": "..."} from the model. Returns the result JSON (json.hpp);
  // bad arguments come back as a validation_failed result, never as an exception.
  std::string Invoke(const std::string& arguments_json, const InvokeOptions& options = {}) const;
  ExecutionResult InvokeResult(const std::string& arguments_json,
                               const InvokeOptions& options = {}) const;

 private:
  std::shared_ptr<CodeActProvider> provider_;
  mutable std::mutex mu_;
  std::shared_ptr<const RunSnapshot> snapshot_;
};

}  // namespace codeact
