#include "provider/client_sessions.hpp"

#include "backends/run_outcome.hpp"
#include "json/definitions.hpp"
#include "provider/result_stamp.hpp"

namespace codeact::internal {
namespace {

ExecutionResult SessionArgumentError(const std::string& message, const CodeActProvider& provider,
                                     Executor& executor) {
  (void)provider;
  ExecutionResult r = NotRunResult(Outcome::kValidationFailed, message);
  r.violations.push_back({0, 0, "argument-error", message,
                          "call execute_code with {\"code\": \"<python source>\", \"session\": "
                          "\"<name>\"} (session optional)"});
  StampBackend(r, executor);
  return r;
}

}  // namespace

ClientSessions::~ClientSessions() {
  std::map<std::string, std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock(mu_);
    sessions.swap(by_name_);
  }
  for (auto& [name, session] : sessions) session->Close();
}

std::string ClientSessions::Definition(DefinitionFormat format) const {
  function_.Refresh();
  return ExecuteCodeDefinitionJson(
      format,
      provider_->ToolDescription(*function_.snapshot()) +
          "\nSessions: pass \"session\": \"<name>\" to run in a persistent interpreter; calls "
          "with the same name share variables, imports and files, and no other name or call "
          "sees them. The result's session_state says \"new\", \"kept\" or \"restarted\" (a run "
          "that hit a limit ends the session's interpreter; the next call starts a fresh one). "
          "Where "
          "the result's session is a handle (cs1....), pass that handle back exactly as given.",
      /*with_sessions=*/true);
}

std::size_t ClientSessions::size() const {
  std::lock_guard lock(mu_);
  return by_name_.size();
}

std::size_t ClientSessions::OpenCount() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [name, session] : by_name_) n += session->closed() ? 0 : 1;
  return n;
}

StatusOr<std::shared_ptr<Session>> ClientSessions::Find(const std::string& name,
                                                        const std::string& shown_as,
                                                        std::string& note) {
  std::lock_guard lock(mu_);
  auto it = by_name_.find(name);
  if (it != by_name_.end()) {
    if (!it->second->closed()) return it->second;
    note = it->second->expired()
               ? "the earlier session \"" + shown_as + "\" " + it->second->closed_reason() +
                     ", and its variables with it; this is a new session"
               : "the earlier session \"" + shown_as + "\" was " + it->second->closed_reason() +
                     "; this is a new session";
    by_name_.erase(it);
  }
  SessionOptions options;
  options.name = name;
  auto opened = open_ ? open_(options) : provider_->OpenSession(options);
  if (!opened.ok()) return opened.status();
  by_name_[name] = *opened;
  return *opened;
}

ExecutionResult ClientSessions::Invoke(const std::string& arguments_json,
                                       const InvokeOptions& options) {
  auto name = ParseSessionArgument(arguments_json);
  if (!name.ok()) {
    return SessionArgumentError(name.status().message(), *provider_, provider_->executor());
  }
  if (!*name) return function_.InvokeResult(arguments_json, options);
  auto code = ParseCodeArgument(arguments_json);
  if (!code.ok()) {
    ExecutionResult r =
        SessionArgumentError(code.status().message(), *provider_, provider_->executor());
    r.session = **name;
    return r;
  }
  return RunNamed(**name, **name, *code, options);
}

ExecutionResult ClientSessions::RunNamed(const std::string& name, const std::string& shown_as,
                                         const std::string& code, const InvokeOptions& options) {
  // Twice at most: a session that expires between the lookup and its run is opened again.
  for (int attempt = 0;; ++attempt) {
    std::string note;
    auto session = Find(name, shown_as, note);
    if (!session.ok()) {
      ExecutionResult r = NotRunResult(
          session.status().code() == StatusCode::kUnavailable ? Outcome::kUnavailable
                                                              : Outcome::kSetupError,
          "session \"" + shown_as + "\" could not be opened: " + session.status().message());
      r.session = shown_as;
      StampBackend(r, provider_->executor());
      return r;
    }
    ExecutionResult r = (*session)->Execute(code, options);
    if (attempt == 0 && (*session)->expired() && !r.session_state) continue;
    if (name != shown_as && r.session) r.session = shown_as;
    if (!note.empty()) r.message = note + (r.message.empty() ? "" : "; " + r.message);
    return r;
  }
}

ExecutionResult ClientSessions::InvokeWithHandle(const std::string& arguments_json,
                                                 const InvokeOptions& options,
                                                 const SessionHandleSigner& signer,
                                                 const std::string& owner) {
  auto value = ParseSessionArgument(arguments_json);
  if (!value.ok() || !*value) return Invoke(arguments_json, options);
  auto code = ParseCodeArgument(arguments_json);
  if (!code.ok()) {
    return SessionArgumentError(code.status().message(), *provider_, provider_->executor());
  }
  if (SessionHandleSigner::LooksLikeHandle(**value)) {
    auto id = signer.Open(**value, owner);
    if (!id.ok()) {
      return SessionArgumentError(id.status().message(), *provider_, provider_->executor());
    }
    // Kept apart from the names a handshake-era client picks on the same connection.
    return RunNamed("handle:" + *id, **value, *code, options);
  }
  const SessionHandleSigner::Minted minted = signer.Mint(owner);
  ExecutionResult r = RunNamed("handle:" + minted.id, minted.handle, *code, options);
  r.session = minted.handle;
  const std::string note =
      "a new session: pass the handle in \"session\" exactly as given to run in it again";
  r.message = r.message.empty() ? note : note + "; " + r.message;
  return r;
}

}  // namespace codeact::internal
