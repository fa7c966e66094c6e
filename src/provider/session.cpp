// CodeActProvider::OpenSession and the Session handle it returns (session.hpp): the provider's
// checks (approval, validation) in front of the backend's session, the tool registry's version
// fixed at open, and the table that counts and expires the provider's sessions.
#include "codeact/session.hpp"

#include "backends/run_outcome.hpp"
#include "codeact/provider.hpp"
#include "common/utf8.hpp"
#include "provider/result_stamp.hpp"
#include "provider/session_table.hpp"

namespace codeact {
namespace internal {

constexpr std::size_t kMaxSessionNameBytes = 128;

class ProviderSession final : public Session {
 public:
  ProviderSession(std::shared_ptr<CodeActProvider> provider, std::shared_ptr<SessionCore> core)
      : provider_(std::move(provider)), core_(std::move(core)) {}
  ~ProviderSession() override { Close(); }

  const std::string& id() const override { return core_->id(); }
  const std::string& name() const override { return core_->name(); }
  std::chrono::system_clock::time_point created() const override { return core_->created(); }
  std::chrono::system_clock::time_point last_used() const override { return core_->last_used(); }

  ExecutionResult Execute(const std::string& code) override { return Execute(code, {}); }

  ExecutionResult Execute(const std::string& code, const InvokeOptions& options) override {
    ExecutionResult r = Run(code, options);
    r.session = core_->name();
    StampBackend(r, *provider_->executor_);
    return r;
  }

  Status Pause() override { return core_->Pause(); }
  Status Resume() override { return core_->Resume(); }
  bool paused() const override { return core_->paused(); }

  void Close() override {
    core_->Close("closed");
    provider_->sessions_->Remove(core_->id());
  }
  bool closed() const override { return core_->closed(); }
  std::string closed_reason() const override { return core_->closed_reason(); }
  bool expired() const override { return core_->expired(); }

 private:
  ExecutionResult Run(const std::string& code, const InvokeOptions& options) {
    if (core_->closed()) {
      return NotRunResult(Outcome::kSetupError, "the session \"" + core_->name() + "\" is " +
                                                    core_->closed_reason() +
                                                    "; nothing ran: open a new session");
    }
    // The session's children were started with the tools of its snapshot; a tool added,
    // replaced or removed since could not be called, or would be called as it was.
    if (provider_->tools_.version() != core_->tools_version()) {
      return NotRunResult(Outcome::kSetupError,
                          "the provider's tools changed after the session \"" + core_->name() +
                              "\" opened; a session keeps the tools it opened with, so nothing "
                              "ran: open a new session");
    }
    if (core_->paused()) {
      return NotRunResult(Outcome::kSetupError, "the session \"" + core_->name() +
                                                    "\" is paused; nothing ran: Resume() it first");
    }
    std::optional<ExecutionResult> ran = core_->Run([&](ExecutorSession& backend) {
      // The session's child keeps the tools it opened with (their approval marks included).
      return provider_->Vet(code, core_->snapshot(), options,
                            [&](const ExecutionRequest& request, const RunSnapshot&) {
                              ExecutionResult r = backend.Execute(request);
                              r.session =
                                  core_->name();  // before the provider fits the result to its size
                              return r;
                            });
    });
    provider_->sessions_->Touched();
    if (!ran) {
      return NotRunResult(Outcome::kSetupError, "the session \"" + core_->name() + "\" is " +
                                                    core_->closed_reason() +
                                                    "; nothing ran: open a new session");
    }
    return std::move(*ran);
  }

  const std::shared_ptr<CodeActProvider> provider_;
  const std::shared_ptr<SessionCore> core_;
};

}  // namespace internal

StatusOr<std::shared_ptr<Session>> CodeActProvider::OpenSession(const SessionOptions& options) {
  if (options.name.size() > internal::kMaxSessionNameBytes) {
    return InvalidArgument("a session name has at most " +
                           std::to_string(internal::kMaxSessionNameBytes) + " bytes");
  }
  if (internal::Utf8Violation(options.name)) {
    return InvalidArgument("a session name must be UTF-8 text");
  }
  const SessionSettings& settings = sessions_->settings();
  if (settings.max_sessions < 1)
    return InvalidArgument("SessionSettings::max_sessions must be >= 1");
  if (settings.idle_expiry_ms < 1)
    return InvalidArgument("SessionSettings::idle_expiry_ms must be positive");
  if (settings.total_memory_bytes < 1)
    return InvalidArgument("SessionSettings::total_memory_bytes must be positive");
  // The version is read before the snapshot: a change in between shows as a changed registry.
  const std::uint64_t version = tools_.version();
  RunSnapshot snapshot = Snapshot();
  if (snapshot.limits.memory_bytes > settings.total_memory_bytes) {
    return InvalidArgument("the memory_bytes limit of " +
                           std::to_string(snapshot.limits.memory_bytes) +
                           " bytes is above the sessions' total memory budget of " +
                           std::to_string(settings.total_memory_bytes) +
                           " bytes (SessionSettings::total_memory_bytes)");
  }
  auto core = sessions_->Add(options.name, snapshot, version,
                             [&] { return executor_->OpenSession(snapshot, settings); });
  if (!core.ok()) return core.status();
  return std::shared_ptr<Session>(
      std::make_shared<internal::ProviderSession>(shared_from_this(), std::move(*core)));
}

int CodeActProvider::OpenSessionCount() const { return sessions_->OpenCount(); }

}  // namespace codeact
