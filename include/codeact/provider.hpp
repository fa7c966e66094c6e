// CodeActProvider: the registries (tools, mounts, network targets), the RunSnapshot frozen per
// run with its config fingerprint, approval, the agent instructions and the per-run
// `execute_code` description. ExecuteCodeFunction is the one tool the model sees.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codeact/execution.hpp"
#include "codeact/executor.hpp"
#include "codeact/file_mount.hpp"
#include "codeact/limits.hpp"
#include "codeact/policy.hpp"
#include "codeact/session.hpp"
#include "codeact/status.hpp"
#include "codeact/tool.hpp"
#include "codeact/validator.hpp"

namespace codeact {

enum class ApprovalMode { kNeverRequire, kAlwaysRequire };

// What the host is asked to approve: the whole code block, since it may call any of its tools.
struct ApprovalRequest {
  std::string code;
  std::vector<std::string> tools_requiring_approval;  // sorted
  bool always_required = false;                       // ApprovalMode::kAlwaysRequire
};
using ApprovalCallback = std::function<bool(const ApprovalRequest&)>;

struct InvokeOptions {
  std::optional<bool> approved;  // an explicit decision wins over the callback
  ApprovalCallback approve;      // asked when no explicit decision is given
  CancellationToken cancel;      // ends the run as `cancelled` (ExecutionRequest::cancel)
};

struct ProviderOptions {
  ExecutorOptions executor;
  ExecutionLimits limits;
  ValidationPolicy policy;
  std::map<std::string, std::string> environment;  // the child's whole environment
  ApprovalMode approval_mode = ApprovalMode::kNeverRequire;
  bool validate = true;  // false only for trusted code (tests, --no-validate)
  SessionSettings sessions;
};

namespace internal {
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
  void AddTool(HostTool tool);
  std::optional<HostTool> GetTool(const std::string& name) const;
  bool RemoveTool(const std::string& name);
  void ClearTools();
  Status AddMount(FileMount mount);  // validates and normalises
  std::optional<FileMount> GetMount(const std::string& mount_path) const;
  bool RemoveMount(const std::string& mount_path);
  void ClearMounts();
  void AddNetworkTarget(const std::string& host);
  bool RemoveNetworkTarget(const std::string& host);
  void ClearNetworkTargets();
  void SetLimits(const ExecutionLimits& limits);
  void SetEnvironment(std::map<std::string, std::string> environment);

  // Frozen copy of everything a run depends on, with its fingerprint (sorted tool names and
  // the registry version, mounts, network targets, limits, environment, policy, backend).
  RunSnapshot Snapshot() const;
  bool RequiresApproval(const RunSnapshot& snapshot) const;
  ApprovalMode approval_mode() const { return options_.approval_mode; }

  // Text for the agent: how to use execute_code well.
  std::string Instructions() const;
  // The execute_code description for this snapshot: tools with call forms, mounts, network,
  // limits, the result fields and the rule that state does not persist between calls.
  std::string ToolDescription(const RunSnapshot& snapshot) const;

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
  // Approval, the code's checks and validation, then `run`: Execute's steps for any executor.
  ExecutionResult Vet(const std::string& code, const RunSnapshot& snapshot,
                      const InvokeOptions& options,
                      const std::function<ExecutionResult(const ExecutionRequest&)>& run);

  CodeActProvider(ProviderOptions options, std::shared_ptr<Validator> validator,
                  std::unique_ptr<Executor> executor);

  const ProviderOptions options_;
  const std::shared_ptr<Validator> validator_;
  const std::unique_ptr<Executor> executor_;
  ToolRegistry tools_;
  mutable std::mutex mu_;
  std::map<std::string, FileMount> mounts_;
  std::vector<std::string> network_targets_;
  ExecutionLimits limits_;
  std::map<std::string, std::string> environment_;
  std::shared_ptr<internal::SessionTable> sessions_;
};

// The local backend (process or namespaces isolation): CodeActProvider::Create on it.
struct LocalCodeActProvider {
  static StatusOr<std::shared_ptr<CodeActProvider>> Create(ProviderOptions options = {});
};

enum class DefinitionFormat { kOpenAI, kMcp };

// The `execute_code` tool as the model sees it.
class ExecuteCodeFunction {
 public:
  explicit ExecuteCodeFunction(std::shared_ptr<CodeActProvider> provider)
      : provider_(std::move(provider)) {}

  static constexpr const char* kName = "execute_code";

  // OpenAI function-calling JSON ({"type":"function","function":{...}}) or an MCP tool
  // ({"name","description","inputSchema"}), described from a fresh snapshot.
  std::string Definition(DefinitionFormat format) const;

  // `arguments_json` is {"code": "..."} from the model. Returns the result JSON (json.hpp);
  // bad arguments come back as a validation_failed result, never as an exception.
  std::string Invoke(const std::string& arguments_json, const InvokeOptions& options = {}) const;
  ExecutionResult InvokeResult(const std::string& arguments_json,
                               const InvokeOptions& options = {}) const;

 private:
  std::shared_ptr<CodeActProvider> provider_;
};

}  // namespace codeact
