#include "codeact/provider.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#include "backends/result_budget.hpp"
#include "backends/run_outcome.hpp"
#include "codeact/json.hpp"
#include "common/egress_target.hpp"
#include "common/log.hpp"
#include "common/utf8.hpp"
#include "json/definitions.hpp"
#include "mcp_client/mcp_upstream.hpp"
#include "provider/fingerprint.hpp"
#include "provider/result_stamp.hpp"
#include "provider/session_table.hpp"
#include "provider/tool_names.hpp"
#include "provider/tool_references.hpp"
#include "provider/verdict_cache.hpp"

namespace codeact {
namespace {

using Clock = std::chrono::steady_clock;

// The registry's mounts with a change applied, checked as one set (CheckMountLayout).
Status CheckMergedMounts(const std::map<std::string, FileMount>& merged) {
  std::vector<FileMount> all;
  all.reserve(merged.size());
  for (const auto& [path, mount] : merged) all.push_back(mount);
  return CheckMountLayout(all);
}

ExecutionResult ArgumentError(const std::string& message) {
  ExecutionResult r = NotRunResult(Outcome::kValidationFailed, message);
  r.violations.push_back(
      {0, 0, "argument-error", message, "call execute_code with {\"code\": \"<python source>\"}"});
  return r;
}

}  // namespace

CodeActProvider::CodeActProvider(ProviderOptions options, std::shared_ptr<Validator> validator,
                                 std::unique_ptr<Executor> executor)
    : options_(std::move(options)),
      validator_(internal::WithVerdictCache(std::move(validator))),
      executor_(std::move(executor)),
      limits_(options_.limits),
      environment_(options_.environment),
      sessions_(std::make_shared<internal::SessionTable>(options_.sessions)) {}

CodeActProvider::~CodeActProvider() {
  sessions_->Shutdown();
  std::lock_guard lock(upstreams_mu_);
  upstreams_.clear();  // each server ends (stdin closed, its group killed) and is reaped
}

Status CodeActProvider::AddMcpServer(McpUpstreamOptions options) {
  if (Status s = internal::CheckServerName(options.name); !s.ok()) return s;
  const std::string name = options.name;
  std::lock_guard lock(upstreams_mu_);
  if (upstreams_.count(name) != 0)
    return InvalidArgument("MCP server name \"" + name + "\" is taken by another server");
  for (const HostTool& t : tools_.Snapshot()) {
    if (t.name == name || t.name.rfind(name + ".", 0) == 0)
      return InvalidArgument("MCP server name \"" + name + "\" is taken by the host tool " +
                             t.name);
  }
  auto upstream = internal::McpUpstream::Start(std::move(options), &tools_);
  if (!upstream.ok()) return upstream.status();
  upstreams_.emplace(name, std::move(*upstream));
  return Status::Ok();
}

bool CodeActProvider::RemoveMcpServer(const std::string& name) {
  std::lock_guard lock(upstreams_mu_);
  return upstreams_.erase(name) > 0;
}

std::vector<std::string> CodeActProvider::McpServerNames() const {
  std::lock_guard lock(upstreams_mu_);
  std::vector<std::string> names;
  for (const auto& [name, upstream] : upstreams_) names.push_back(name);
  return names;
}

Status CodeActProvider::CheckToolName(const std::string& name) const {
  // The modules the code may import under the policy in force: a tool named like one would be
  // hidden by `import json`. Without the validator's answer only the fixed names are checked.
  auto patterns = validator_->AllowedImports(options_.policy);
  static const std::vector<std::string> kNone;
  return internal::CheckToolName(name, patterns.ok() ? *patterns : kNone);
}

Status CodeActProvider::AddTool(HostTool tool) {
  if (Status s = CheckToolName(tool.name); !s.ok()) return s;
  tools_.Add(std::move(tool));
  return Status::Ok();
}

Status CodeActProvider::AddTools(std::vector<HostTool> tools) {
  for (const auto& t : tools) {
    if (Status s = CheckToolName(t.name); !s.ok()) return s;
  }
  tools_.AddAll(std::move(tools));
  return Status::Ok();
}

std::optional<HostTool> CodeActProvider::GetTool(const std::string& name) const {
  return tools_.Get(name);
}
std::vector<HostTool> CodeActProvider::ListTools() const { return tools_.Snapshot(); }
bool CodeActProvider::RemoveTool(const std::string& name) { return tools_.Remove(name); }
std::size_t CodeActProvider::RemoveTools(const std::vector<std::string>& names) {
  return tools_.RemoveAll(names);
}
void CodeActProvider::ClearTools() { tools_.Clear(); }

Status CodeActProvider::AddMounts(std::vector<FileMount> mounts) {
  std::vector<FileMount> checked;
  for (auto& m : mounts) {
    auto one = ValidateMount(std::move(m));
    if (!one.ok()) return one.status();
    for (const auto& earlier : checked) {
      if (earlier.mount_path == one->mount_path) {
        return InvalidArgument("two mounts at " + one->mount_path);
      }
    }
    checked.push_back(std::move(*one));
  }
  std::lock_guard lock(mu_);
  std::map<std::string, FileMount> merged = mounts_;
  for (auto& m : checked) {
    std::string key = m.mount_path;
    merged.insert_or_assign(std::move(key), std::move(m));
  }
  if (Status s = CheckMergedMounts(merged); !s.ok()) return s;
  mounts_ = std::move(merged);
  return Status::Ok();
}

std::vector<FileMount> CodeActProvider::ListMounts() const {
  std::lock_guard lock(mu_);
  std::vector<FileMount> out;
  for (const auto& [path, mount] : mounts_) out.push_back(mount);
  return out;
}

std::size_t CodeActProvider::RemoveMounts(const std::vector<std::string>& mount_paths) {
  std::size_t removed = 0;
  for (const auto& p : mount_paths) removed += RemoveMount(p) ? 1 : 0;
  return removed;
}

std::vector<std::string> CodeActProvider::ListNetworkTargets() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> texts;
  for (const EgressTarget& t : network_targets_) texts.push_back(t.text);
  return texts;
}

Status CodeActProvider::AddMount(FileMount mount) {
  auto checked = ValidateMount(std::move(mount));
  if (!checked.ok()) return checked.status();
  std::lock_guard lock(mu_);
  std::map<std::string, FileMount> merged = mounts_;
  std::string key = checked->mount_path;
  merged.insert_or_assign(std::move(key), std::move(*checked));
  if (Status s = CheckMergedMounts(merged); !s.ok()) return s;
  mounts_ = std::move(merged);
  return Status::Ok();
}

std::optional<FileMount> CodeActProvider::GetMount(const std::string& mount_path) const {
  auto key = NormaliseMountPath(mount_path);
  if (!key.ok()) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = mounts_.find(*key);
  if (it == mounts_.end()) return std::nullopt;
  return it->second;
}

bool CodeActProvider::RemoveMount(const std::string& mount_path) {
  auto key = NormaliseMountPath(mount_path);
  if (!key.ok()) return false;
  std::lock_guard lock(mu_);
  return mounts_.erase(*key) > 0;
}

void CodeActProvider::ClearMounts() {
  std::lock_guard lock(mu_);
  mounts_.clear();
}

Status CodeActProvider::AddNetworkTarget(const std::string& target) {
  StatusOr<EgressTarget> parsed = internal::ParseEgressTarget(target);
  if (!parsed.ok()) return parsed.status();
  std::lock_guard lock(mu_);
  if (std::none_of(network_targets_.begin(), network_targets_.end(),
                   [&](const EgressTarget& t) { return t.text == target; })) {
    network_targets_.push_back(std::move(*parsed));
    std::sort(network_targets_.begin(), network_targets_.end(),
              [](const EgressTarget& a, const EgressTarget& b) { return a.text < b.text; });
  }
  return Status::Ok();
}

bool CodeActProvider::RemoveNetworkTarget(const std::string& target) {
  std::lock_guard lock(mu_);
  return std::erase_if(network_targets_, [&](const EgressTarget& t) { return t.text == target; }) >
         0;
}

void CodeActProvider::ClearNetworkTargets() {
  std::lock_guard lock(mu_);
  network_targets_.clear();
}

void CodeActProvider::SetLimits(const ExecutionLimits& limits) {
  std::lock_guard lock(mu_);
  limits_ = limits;
}

void CodeActProvider::SetEnvironment(std::map<std::string, std::string> environment) {
  std::lock_guard lock(mu_);
  environment_ = std::move(environment);
}

RunSnapshot CodeActProvider::Snapshot() const {
  {
    std::lock_guard lock(upstreams_mu_);
    for (const auto& [name, upstream] : upstreams_) {
      if (Status st = upstream->RefreshIfChanged(); !st.ok())
        internal::LogWarning("listing the tools of MCP server '" + name +
                             "' again failed: " + st.message());
    }
  }
  RunSnapshot s;
  const std::uint64_t version = tools_.version();
  s.tools = tools_.Snapshot();
  {
    std::lock_guard lock(mu_);
    for (const auto& [path, mount] : mounts_) s.mounts.push_back(mount);
    s.network_targets = network_targets_;
    s.environment = environment_;
    s.limits = limits_;
  }
  s.policy = options_.policy;
  // One truth about network: the validator's hint names what the backend serves the targets
  // with, and says there is no network when there are none (ValidationPolicy::network_tools).
  s.policy.network_tools.clear();
  if (!s.network_targets.empty()) {
    BackendTraits traits = executor_->Traits(s);
    if (traits.network_targets) s.policy.network_tools = std::move(traits.network_tools);
  }
  // The validator refuses a call of one of these whose coroutine is not awaited: the host's
  // tools and the backend's network tools.
  s.policy.tool_names.clear();
  for (const auto& t : s.tools) s.policy.tool_names.push_back(t.name);
  for (const auto& t : s.policy.network_tools) s.policy.tool_names.push_back(t);
  s.fingerprint = internal::ComputeFingerprint(s, version, options_.executor);
  return s;
}

bool CodeActProvider::RequiresApproval(const RunSnapshot& snapshot) const {
  if (options_.approval_mode == ApprovalMode::kAlwaysRequire) return true;
  return std::any_of(snapshot.tools.begin(), snapshot.tools.end(),
                     [](const HostTool& t) { return t.requires_approval; });
}

ApprovalRequest CodeActProvider::ApprovalFor(const std::string& code,
                                             const RunSnapshot& snapshot) const {
  ApprovalRequest request;
  request.always_required = options_.approval_mode == ApprovalMode::kAlwaysRequire;
  std::vector<std::string> gated;
  for (const auto& t : snapshot.tools) {
    if (t.requires_approval) gated.push_back(t.name);
  }
  if (gated.empty()) return request;
  const internal::ToolReferences refs = internal::FindToolReferences(code, gated);
  request.any_tool = refs.dynamic;
  if (refs.dynamic) {
    request.tools_requiring_approval = std::move(gated);  // sorted: the snapshot's order
  } else {
    request.tools_requiring_approval.assign(refs.names.begin(), refs.names.end());
  }
  return request;
}

ExecutionResult CodeActProvider::Execute(const std::string& code, const InvokeOptions& options) {
  return Execute(code, Snapshot(), options);
}

ExecutionResult CodeActProvider::Execute(const std::string& code, const RunSnapshot& snapshot,
                                         const InvokeOptions& options) {
  if (!options.tenant.empty() && options.tenant != snapshot.tenant) {
    // The caller's own warm children (RunSnapshot::tenant): a copy only for a tenant's run.
    RunSnapshot of_tenant = snapshot;
    of_tenant.tenant = options.tenant;
    return Execute(code, of_tenant, options);
  }
  const BackendTraits traits = executor_->Traits(snapshot);
  return Vet(
      code, snapshot, options,
      [&](const ExecutionRequest& request, const RunSnapshot& vetted) {
        return executor_->Execute(request, vetted);
      },
      traits.validates_in_child    ? ValidationSite::kChild
      : traits.overlaps_validation ? ValidationSite::kOverlapped
                                   : ValidationSite::kFirst);
}

ExecutionResult CodeActProvider::Vet(
    const std::string& code, const RunSnapshot& snapshot, const InvokeOptions& options,
    const std::function<ExecutionResult(const ExecutionRequest&, const RunSnapshot&)>& run,
    ValidationSite site) {
  const auto start = Clock::now();
  auto finish = [&](ExecutionResult r) {
    // Every result, whether it reached the executor or not, is stamped and fitted here, once.
    internal::StampBackend(r, *executor_);
    internal::FitResult(r, snapshot.limits, snapshot.mounts);
    r.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    return r;
  };
  // A call withdrawn before it got here (queued behind others, say) costs nothing more.
  if (options.cancel.cancelled()) {
    const std::string reason = options.cancel.reason();
    return finish(NotRunResult(
        Outcome::kCancelled,
        "cancelled: " + (reason.empty() ? std::string("the caller cancelled the run") : reason)));
  }

  // Network targets a backend cannot serve are refused, never dropped (BackendTraits).
  if (!snapshot.network_targets.empty() && !executor_->Traits(snapshot).network_targets) {
    return finish(NotRunResult(Outcome::kSetupError,
                               "network targets (" + snapshot.network_targets.front().text +
                                   (snapshot.network_targets.size() > 1 ? ", ..." : "") +
                                   ") need egress, which this backend does not have: remove them"));
  }

  // The tools a run may call are those of its snapshot; a gated one stays marked
  // requires_approval in the copy the executor gets unless this run was approved, and the bridge
  // refuses its calls (ToolError "ApprovalRequired").
  RunSnapshot vetted = snapshot;
  ApprovalRequest request = ApprovalFor(code, vetted);
  bool approved = options.approved.value_or(false);
  if (request.always_required || !request.tools_requiring_approval.empty()) {
    request.code = code;
    if (!options.approved.has_value() && options.approve) {
      try {
        approved = options.approve(request);
      } catch (...) {
        approved = false;  // a failing approver never approves
      }
    }
    if (!approved) {
      std::string why = request.always_required ? "every run needs approval"
                        : request.any_tool
                            ? "this run names a tool dynamically, so it can call any of the tools "
                              "that need approval:"
                            : "this run calls tools that need approval:";
      for (const auto& name : request.tools_requiring_approval) why += " " + name;
      return finish(
          NotRunResult(Outcome::kApprovalRequired,
                       (options.approved.has_value() || options.approve ? "approval denied: "
                                                                        : "approval required: ") +
                           why));
    }
  }
  if (approved) {
    for (auto& tool : vetted.tools) tool.requires_approval = false;
  }

  if (code.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
    return finish(ArgumentError("argument \"code\" is empty"));
  }
  // The code is text: bytes that are not UTF-8 could reach neither the validator nor the child.
  // (A file's PEP 263 coding cookie is the reader's business: `codeact run` decodes files.)
  if (auto bad = internal::Utf8Violation(code)) {
    ExecutionResult r = NotRunResult(Outcome::kValidationFailed, bad->message);
    r.violations.push_back(std::move(*bad));
    return finish(std::move(r));
  }
  ExecutionRequest to_run{code, options.cancel, approved, std::nullopt, options.on_output};
  if (std::optional<ExecutionResult> rejected = PlaceValidation(code, snapshot, site, to_run)) {
    return finish(std::move(*rejected));
  }
  // Validation can take a while: a run cancelled meanwhile does not start.
  return finish(run(to_run, vetted));
}

std::optional<ExecutionResult> CodeActProvider::PlaceValidation(const std::string& code,
                                                                const RunSnapshot& snapshot,
                                                                ValidationSite site,
                                                                ExecutionRequest& to_run) const {
  if (!options_.validate) return std::nullopt;
  if (site == ValidationSite::kChild) {
    to_run.validate_in_child = snapshot.policy;
    return std::nullopt;
  }
  // Code over the policy's size limit is validated here, first: it never reaches a child that
  // waits for the host's verdict.
  const bool oversized = snapshot.policy.max_code_bytes > 0 &&
                         static_cast<std::int64_t>(code.size()) > snapshot.policy.max_code_bytes;
  if (site == ValidationSite::kOverlapped && !oversized) {
    to_run.host_verdict = [this, &code, &snapshot] {
      return validator_->Validate(code, snapshot.policy);
    };
    return std::nullopt;
  }
  ValidationReport report = validator_->Validate(code, snapshot.policy);
  if (report.ok) return std::nullopt;
  return internal::RejectedResult(std::move(report.violations));
}

StatusOr<std::shared_ptr<CodeActProvider>> CodeActProvider::Create(
    ProviderOptions options, std::unique_ptr<Executor> executor,
    std::shared_ptr<Validator> validator) {
  if (!validator) {
    auto embedded = Validator::Embedded();
    if (!embedded.ok()) return embedded.status();
    validator = std::move(*embedded);
  }
  if (!executor) {
    auto created = CreateExecutor(options.executor);
    if (!created.ok()) return created.status();
    executor = std::move(*created);
  }
  // The fingerprint names what really runs: kAuto resolved, and a given executor's own backend.
  options.executor.backend = executor->backend();
  options.executor.isolation = executor->isolation();
  const std::string working_directory = options.working_directory;
  auto provider = std::shared_ptr<CodeActProvider>(
      new CodeActProvider(std::move(options), std::move(validator), std::move(executor)));
  if (!working_directory.empty()) {
    FileMount work;
    work.host_path = working_directory;
    work.mount_path = kWorkingDirectoryMount;
    work.mode = MountMode::kReadWrite;
    auto checked = ValidateMount(std::move(work));
    if (checked.ok() && checked->kind != MountKind::kDirectory) {
      return InvalidArgument("working directory: " + checked->host_path +
                             " is a file, not a directory");
    }
    if (Status s = checked.ok() ? provider->AddMount(std::move(*checked)) : checked.status();
        !s.ok()) {
      return InvalidArgument("working directory: " + s.message());
    }
  }
  return provider;
}

StatusOr<std::shared_ptr<CodeActProvider>> LocalCodeActProvider::Create(ProviderOptions options) {
  if (options.executor.backend != BackendKind::kLocal) {
    return InvalidArgument("LocalCodeActProvider needs the local backend");
  }
  return CodeActProvider::Create(std::move(options));
}

ExecuteCodeFunction::ExecuteCodeFunction(std::shared_ptr<CodeActProvider> provider)
    : provider_(std::move(provider)),
      snapshot_(std::make_shared<const RunSnapshot>(provider_->Snapshot())) {}

ExecuteCodeFunction::ExecuteCodeFunction(const ExecuteCodeFunction& other)
    : provider_(other.provider_), snapshot_(other.snapshot()) {}

ExecuteCodeFunction& ExecuteCodeFunction::operator=(const ExecuteCodeFunction& other) {
  if (this == &other) return *this;
  auto bound = other.snapshot();
  std::lock_guard lock(mu_);
  provider_ = other.provider_;
  snapshot_ = std::move(bound);
  return *this;
}

bool ExecuteCodeFunction::Refresh() {
  auto fresh = std::make_shared<const RunSnapshot>(provider_->Snapshot());
  std::lock_guard lock(mu_);
  const bool changed = fresh->fingerprint != snapshot_->fingerprint;
  snapshot_ = std::move(fresh);
  return changed;
}

bool ExecuteCodeFunction::Stale() const {
  const std::string now = provider_->Snapshot().fingerprint;
  std::lock_guard lock(mu_);
  return now != snapshot_->fingerprint;
}

std::shared_ptr<const RunSnapshot> ExecuteCodeFunction::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

std::string ExecuteCodeFunction::Definition(DefinitionFormat format) const {
  const auto bound = snapshot();
  return internal::ExecuteCodeDefinitionJson(format, provider_->ToolDescription(*bound));
}

ExecutionResult ExecuteCodeFunction::InvokeResult(const std::string& arguments_json,
                                                  const InvokeOptions& options) const {
  auto code = internal::ParseCodeArgument(arguments_json);
  if (!code.ok()) {
    ExecutionResult r = ArgumentError(code.status().message());
    internal::StampBackend(r, provider_->executor());
    return r;
  }
  const auto bound = snapshot();
  return provider_->Execute(*code, *bound, options);
}

std::string ExecuteCodeFunction::Invoke(const std::string& arguments_json,
                                        const InvokeOptions& options) const {
  return ToJson(InvokeResult(arguments_json, options));
}

}  // namespace codeact
